"""paging: a layered-paging laboratory for Mixture-of-Experts expert caching."""

from paging.errors import PagingError
from paging.layout import Layout
from paging.policies import POLICY_NAMES, make_policy, register
from paging.result import Result
from paging.simulate import simulate, verifying
from paging.trace import Trace, from_pages, from_routing

__all__ = ["Layout", "Trace", "from_pages", "from_routing", "simulate", "verifying", "Result",
           "make_policy", "register", "POLICY_NAMES", "PagingError"]
__version__ = "0.1.0"
