"""The `site` spider: scrapes a start page and, with follow=1, every page of the same host it
links to (the repository's sample-site/ served on loopback), one item per page.

Spider arguments (Scrapyd's schedule.json passes them as form fields):
- url: the start page (required);
- follow: "1" to follow links on the same host and port (default "0": the start page only);
- delay: seconds between two requests (DOWNLOAD_DELAY, default 0), so that a cancel can land
  while the crawl runs;
- fail: "1" to fail on purpose before any request (the process exits with an error and writes no
  item: the failing-target scenario).
"""
from urllib.parse import urlsplit

import scrapy


class SiteSpider(scrapy.Spider):
    name = "site"

    def __init__(self, url=None, follow="0", delay="0", fail="0", *args, **kwargs):
        super().__init__(*args, **kwargs)
        if fail == "1":
            raise ValueError("failing on purpose (spider argument fail=1)")
        if not url:
            raise ValueError("the spider argument `url` is required")
        self.start_urls = [url]
        self.follow = follow == "1"
        # Scrapy waits this long between two requests to the site (one at a time once set).
        self.download_delay = float(delay)
        self.origin = urlsplit(url).netloc

    def parse(self, response):
        # One INFO line per page (the project logs at INFO): a test can tell from Scrapyd's log
        # (`/logs/...`) that the crawl has produced an item.
        self.logger.info("scraped page %s", response.url)
        yield {
            "url": response.url,
            "status": response.status,
            "title": (response.css("title::text").get() or "").strip(),
            "text": " ".join(t.strip() for t in response.css("body *::text").getall() if t.strip()),
        }
        if not self.follow:
            return
        for href in response.css("a::attr(href)").getall():
            target = response.urljoin(href).split("#", 1)[0]
            if urlsplit(target).netloc == self.origin:
                yield scrapy.Request(target, callback=self.parse)
