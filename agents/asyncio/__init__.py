"""Temporary."""
from ._query import query as query
