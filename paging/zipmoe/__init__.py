"""ZipMoE's theory, checked: the rank-based hit model (Sec. 3.4, App. C-D) and the
cache-affinity scheduler (Sec. 3.3, App. A-B) of

Yang, Zhao, Yang, Wang and Zhou, "ZipMoE: Efficient On-Device MoE Serving via Lossless
Compression and Cache-Affinity Scheduling" (../shared/papers/zipmoe_compression-cache-affinity.txt).

* :mod:`paging.zipmoe.hitmodel`: expert frequency ranks of a trace, Chen et al.'s selection
  probabilities, the Poisson-binomial DP (Algorithm 2), the conditional hit-pattern law, brute
  force, the maximum-entropy check of Theorem 3.2 and the real-trace goodness of fit;
* :mod:`paging.zipmoe.scheduler`: Algorithm 1, an exact simulator of the schedule it induces,
  Algorithm 3's makespan estimate, Lemma B.3's lower bound and an exact optimum (time-indexed ILP).
"""
