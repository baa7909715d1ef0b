"""Predictors: for prefetching (prefetch.py) and for paging with predictions."""
