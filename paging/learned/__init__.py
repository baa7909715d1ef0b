"""Learned eviction: FlashMoE's network in numpy, its training data from Belady's evictions, and
the model files the :class:`paging.policies.learned.FlashMoE` policy loads.

* :mod:`paging.learned.features` — the paper's recency/frequency features;
* :mod:`paging.learned.mlp` — the network, its backpropagation and AdamW;
* :mod:`paging.learned.model` — the model file (weights, layout, training sequences);
* :mod:`paging.learned.train` — dataset and training (``python -m paging.learned.train``).
"""
