# Settings of the test project: a polite but quick crawl of pages served on loopback.
BOT_NAME = "realsite"
SPIDER_MODULES = ["realsite.spiders"]
NEWSPIDER_MODULE = "realsite.spiders"

# The pages are the suite's own: no robots.txt to honour, no throttling beyond the spider's `delay`.
ROBOTSTXT_OBEY = False
CONCURRENT_REQUESTS = 4
TELNETCONSOLE_ENABLED = False
LOG_LEVEL = "INFO"
# One item per line (Scrapyd's items feed is JSON lines): keep non-ASCII text as written.
FEED_EXPORT_ENCODING = "utf-8"
