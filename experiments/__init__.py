"""Experiments: one script per figure of Angelopoulos et al., Sec. 5 (and the coupon figure).

Each ``experiments/figX.py`` has ``compute(out_dir, ...) -> csv path`` (numbers only, plus a JSON
of parameters and seeds next to the CSV), ``plot(csv, out_dir) -> [png, pdf]`` (reads only the
CSV) and ``main(argv)`` (``python -m experiments.fig4``). :mod:`experiments.run_all` and
``paging figs`` run them all. Experiments compose :mod:`paging`; they define no policy.
"""
