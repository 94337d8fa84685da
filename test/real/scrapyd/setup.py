# Packaging for Scrapyd: `python setup.py bdist_egg` makes the egg addversion.json takes; the
# entry point tells Scrapyd where the project's settings are.
from setuptools import find_packages, setup

setup(
    name="realsite",
    version="1.0",
    packages=find_packages(),
    entry_points={"scrapy": ["settings = realsite.settings"]},
)
