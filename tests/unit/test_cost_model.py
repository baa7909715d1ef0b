"""The MoE cost model (paging.cost): hand-computed arithmetic, SpecMD Table 3 agreement, a source
for every number, the generated doc table, user model files and the ``paging cost`` command."""

from __future__ import annotations

import json
from fractions import Fraction
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import needs_traces  # noqa: I001

from paging.cli import main
from paging.cost import (
    HARDWARE,
    MODELS,
    PRECISIONS,
    SOURCES,
    TIER_HOST,
    TIER_SSD,
    budget_bytes,
    capacity_pages,
    doc,
    expert_compute_ms,
    get_hardware,
    get_model,
    get_precision,
    non_expert_ms,
    page_costs,
    page_sizes,
    place_by_frequency,
    transfer_ms,
)
from paging.cost.presets import (
    HARDWARE_UNITS,
    MODEL_UNITS,
    OPTIONAL_MODEL_UNITS,
    PRECISION_UNITS,
)
from paging.errors import PagingError
from paging.layout import Layout

MIB, GIB = 2**20, 2**30

# SpecMD App. E Table 3: layers, experts, top-k, expert size (MB = MiB), expert params (GiB),
# non-expert (GiB), total (GiB), activated (GiB)
TABLE3 = {
    "olmoe-1b-7b": (16, 64, 8, "12", "12.0", "0.89", "12.89", "2.39"),
    "mixtral-8x7b": (32, 8, 2, "336", "84.0", "2.99", "86.99", "23.99"),
    "qwen1.5-moe-a2.7b": (24, 60, 4, "16.5", "23.2", "3.46", "26.67", "5.01"),
    "phi-3.5-moe": (32, 16, 2, "150", "75.0", "2.99", "77.99", "12.37"),
}


# --- expert sizes, by hand ----

def test_mixtral_expert_bytes_by_hand():
    m = get_model("mixtral-8x7b")
    assert m.expert_params == 3 * 4096 * 14336 == 176_160_768
    assert m.expert_bytes("bf16") == 352_321_536 == 336 * MIB
    # int8: one byte per weight + one fp32 scale per output row (2 * 14336 + 4096 rows)
    assert m.expert_bytes("int8") == 176_160_768 + 4 * 32_768 == 176_291_840
    # int4: half a byte per weight + one fp32 absmax per 64 weights (0.5 bit/weight)
    assert m.expert_bytes("int4") == 88_080_384 + 176_160_768 // 64 * 4 == 99_090_432
    # int2: a quarter byte per weight + fp16 scale and zero per 64 weights
    assert m.expert_bytes("int2") == 44_040_192 + 176_160_768 // 64 * 4 == 55_050_240


def test_granite_from_config_by_hand():
    g = get_model("granite-3.0-1b-a400m")
    assert (g.n_layers, g.n_experts, g.top_k, g.d_model, g.d_ff) == (24, 32, 8, 1024, 512)
    assert g.expert_params == 1_572_864
    emb, attn, router_norms = 49155 * 1024, 2 * 1024**2 + 2 * 1024 * 512, 1024 * 32 + 2 * 1024
    assert (emb, attn, router_norms) == (50_334_720, 3_145_728, 34_816)
    assert g.non_expert_params == emb + 24 * (attn + router_norms) + 1024 == 126_668_800
    total = g.non_expert_params + 24 * 32 * g.expert_params
    active = g.non_expert_params + 24 * 8 * g.expert_params
    assert (total, active) == (1_334_628_352, 428_658_688)  # "1B", "A400M"
    assert g.expert_bytes("int2") == 393_216 + 3 * 8192 * 4 == 491_520


def test_expert_bytes_round_up_partial_bytes_and_groups():
    from paging.cost.presets import Model

    m = Model("odd", 1, 1, 1, d_model=3, d_ff=5, n_matrices=3, non_expert_params=1)
    # 15 weights per matrix: int4 ceil(7.5) = 8 bytes + ceil(15/64) = 1 group of 4 bytes
    assert m.expert_bytes("int4") == 3 * (8 + 4)
    assert m.expert_bytes("int2") == 3 * (4 + 4)                 # ceil(3.75) = 4
    assert m.expert_bytes("int8") == 3 * 15 + 4 * (2 * 5 + 3)    # 13 rows of fp32 scales
    assert isinstance(m.expert_bytes("int4"), int)


# --- SpecMD Table 3 ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", TABLE3)
def test_table3_agrees_with_the_arithmetic(name):
    """Table 3's MB/GB are MiB/GiB. Expert sizes agree exactly (to Table 3's printed digits);
    totals and activated sizes within 0.01 GiB (the rounding of the non-expert column)."""
    layers, experts, top_k, mb, expert_gb, non_gb, total_gb, act_gb = TABLE3[name]
    m = MODELS[name]
    assert (m.n_layers, m.n_experts, m.top_k) == (layers, experts, top_k)
    expert = m.expert_bytes("bf16")
    assert Fraction(expert, MIB) == Fraction(mb)                        # exact
    all_experts = Fraction(m.n_layers * m.n_experts * expert, GIB)
    assert round(all_experts, 1) == Fraction(expert_gb)
    non = Fraction(2 * m.non_expert_params, GIB)
    assert abs(non - Fraction(non_gb)) <= Fraction(1, 200)
    assert abs(all_experts + non - Fraction(total_gb)) <= Fraction(1, 100)
    active = non + Fraction(m.n_layers * m.top_k * expert, GIB)
    assert abs(active - Fraction(act_gb)) <= Fraction(1, 100)


def test_mixtral_non_expert_from_its_config_rounds_to_table3():
    attn = 2 * 4096 * 4096 + 2 * 4096 * 1024
    count = 2 * 32000 * 4096 + 32 * (attn + 2 * 4096 + 4096 * 8) + 4096
    assert count == 1_605_636_096
    assert round(Fraction(2 * count, GIB), 2) == Fraction("2.99")
    assert MODELS["mixtral-8x7b"].non_expert_params == 1_605_244_027  # round(2.99 * 2^30 / 2)


# --- transfer and compute ----

def test_transfer_ms_host_and_ssd_by_hand():
    h = get_hardware("link-5gbps")
    b = 352_321_536
    assert transfer_ms(b, h) == pytest.approx(0.01 + 70.4643072, rel=1e-12)
    # staged: 100 us + b / 7.45 GB/s, then the host copy
    assert transfer_ms(b, h, "ssd") == pytest.approx(0.1 + b / 7.45e6 + 70.4743072, rel=1e-12)
    assert transfer_ms(0, h) == pytest.approx(0.01)
    with pytest.raises(PagingError, match="unknown tier 'gpu'; valid: host, ssd"):
        transfer_ms(1, h, "gpu")
    with pytest.raises(PagingError, match="nbytes must be an integer >= 0"):
        transfer_ms(-1, h)


@pytest.mark.parametrize("field, value, message", [
    ("link_gbps", 0.0, "link_gbps must be a finite number > 0 (GB/s), got 0.0"),
    ("ssd_gbps", -3.5, "ssd_gbps must be a finite number > 0 (GB/s), got -3.5"),
    ("hbm_gbps", float("nan"), "hbm_gbps must be a finite number > 0 (GB/s), got nan"),
    ("peak_tflops", float("inf"), "peak_tflops must be a finite number > 0 (TFLOP/s), got inf"),
    ("link_latency_us", -1.0, "link_latency_us must be a finite number >= 0 (us), got -1.0"),
])
def test_hardware_refuses_rates_and_latencies_out_of_range(field, value, message):
    """A zero bandwidth divided by zero in transfer_ms; a negative or NaN one gave negative or
    NaN times silently."""
    import dataclasses
    import re

    hw = get_hardware("pcie4")
    with pytest.raises(PagingError, match="^" + re.escape(f"hardware pcie4: {message}")):
        dataclasses.replace(hw, **{field: value})
    assert dataclasses.replace(hw, link_latency_us=0.0, ssd_latency_us=0).link_latency_us == 0


def test_ssd_host_ratio_near_an_order_of_magnitude():
    """granite-3.0-1b-a400m at int2 on pcie5: 491,520-byte experts, so the 100 us SSD latency
    dominates: host 10 us + 9.8304 us, SSD 100 us + 33.4367 us + host; ratio 7.73. Large experts
    (Mixtral bf16) tend to 1 + 50/14.7 = 4.4."""
    h, g = get_hardware("pcie5"), get_model("granite-3.0-1b-a400m")
    b = g.expert_bytes("int2")
    host, ssd = transfer_ms(b, h, "host"), transfer_ms(b, h, "ssd")
    assert host == pytest.approx(0.01 + 0.0098304, rel=1e-12)
    assert ssd == pytest.approx(0.1 + 491_520 / 14.7e6 + host, rel=1e-12)
    assert ssd / host == pytest.approx(7.729, abs=1e-3)
    big = get_model("mixtral-8x7b").expert_bytes("bf16")
    # 352 MB: the 110 us of latencies add 0.2% to 1 + 50/14.7 = 4.4014
    assert transfer_ms(big, h, "ssd") / transfer_ms(big, h) == pytest.approx(4.4107, abs=1e-4)


def test_expert_compute_roofline_by_hand():
    h, m = get_hardware("pcie4"), get_model("mixtral-8x7b")
    # decode: memory-bound, 352,321,536 B / 1.935e12 B/s
    assert expert_compute_ms(m, "bf16", h, 1) == pytest.approx(352_321_536 / 1.935e9, rel=1e-12)
    # int4 reads fewer bytes
    assert expert_compute_ms(m, "int4", h, 1) == pytest.approx(99_090_432 / 1.935e9, rel=1e-12)
    # prefill of 1000 tokens: compute-bound, 2 * 176,160,768 * 1000 FLOP / 312e12 FLOP/s
    assert expert_compute_ms(m, "bf16", h, 1000) == pytest.approx(
        2 * 176_160_768 * 1000 / 312e9, rel=1e-12)
    # the bf16 crossover is 312 / 1.935 = 161.2 tokens
    assert expert_compute_ms(m, "bf16", h, 161) == expert_compute_ms(m, "bf16", h, 1)
    assert expert_compute_ms(m, "bf16", h, 162) > expert_compute_ms(m, "bf16", h, 1)


def test_non_expert_ms_per_layer_by_hand():
    h, g = get_hardware("pcie4"), get_model("granite-3.0-1b-a400m")
    per_layer = 126_668_800 / 24  # 5,277,866.67 params, 16-bit
    assert non_expert_ms(g, h, 1) == pytest.approx(2 * per_layer / 1.935e9, rel=1e-12)
    assert non_expert_ms(g, h, 4096) == pytest.approx(2 * per_layer * 4096 / 312e9, rel=1e-12)


# --- pages, tiers, budgets ----

def test_layout_and_page_sizes():
    m = get_model("mixtral-8x7b")
    assert m.layout == Layout(n_experts=8, n_layers=32)
    s = page_sizes(m, "int4")
    assert s.dtype == np.int64 and s.shape == (256,) and set(s.tolist()) == {99_090_432}


def test_check_layout_message():
    m = get_model("mixtral-8x7b")
    m.check_layout(SimpleNamespace(layout=Layout(8, 32), name="t.jsonl"))  # matches: no error
    with pytest.raises(PagingError) as e:
        m.check_layout(SimpleNamespace(layout=Layout(n_experts=32, n_layers=24), name="TRACE"))
    assert str(e.value) == "model mixtral-8x7b has 32 layers x 8 experts, the trace TRACE has " \
                           "24 x 32"


def test_place_by_frequency_ties_by_page_id():
    f = np.array([3, 5, 3, 0, 5, 3])
    # order: 1, 4 (5 each, smaller id first), then 0, 2, 5 (3 each), then 3; 0 = host
    assert place_by_frequency(f, 3).tolist() == [0, 0, 1, 1, 0, 1]
    assert place_by_frequency(f, 4).tolist() == [0, 0, 0, 1, 0, 1]
    assert place_by_frequency(f, 0).tolist() == [1] * 6
    assert place_by_frequency(f, 99).tolist() == [0] * 6
    for bad in ([], [[1, 2]], [1, -1]):
        with pytest.raises(PagingError, match="freq must be"):
            place_by_frequency(bad, 1)
    with pytest.raises(PagingError, match="host_capacity_pages must be an integer >= 0"):
        place_by_frequency(f, -1)


def test_page_costs_from_tiers():
    g, h = get_model("granite-3.0-1b-a400m"), get_hardware("pcie5")
    freq = np.arange(g.layout.n_pages)[::-1]  # page 0 most frequent
    tiers = place_by_frequency(freq, 100)
    assert (tiers[:100] == TIER_HOST).all() and (tiers[100:] == TIER_SSD).all()
    c = page_costs(g, "int2", h, tiers)
    assert c.dtype == np.float64 and c.shape == (768,)
    assert c[0] == transfer_ms(491_520, h, "host") and c[767] == transfer_ms(491_520, h, "ssd")
    with pytest.raises(PagingError, match="tiers must hold 768 entries"):
        page_costs(g, "int2", h, tiers[:10])
    with pytest.raises(PagingError, match="each 0 \\(host\\) or 1 \\(ssd\\)"):
        page_costs(g, "int2", h, np.full(768, 2))


def test_budget_and_capacity():
    assert budget_bytes(0.6) == 600_000_000       # SpecMD's "0.6GB", 1 GB = 1e9 bytes
    assert budget_bytes(0.1) == 100_000_000       # decimal, no float artefact
    assert budget_bytes(21) == 21_000_000_000
    m = get_model("mixtral-8x7b")
    assert capacity_pages(budget_bytes(21), m, "bf16") == 21_000_000_000 // 352_321_536 == 59
    assert capacity_pages(352_321_535, m, "bf16") == 0
    for bad in (0, -1, float("nan"), float("inf"), "1", True):
        with pytest.raises(PagingError, match="the budget must be a number of GB > 0"):
            budget_bytes(bad)


# --- sources and the doc ----

def test_every_preset_number_has_a_source():
    names = {s.name: s for s in SOURCES}
    for kind, presets, units in (("model", MODELS, MODEL_UNITS),
                                 ("precision", PRECISIONS, PRECISION_UNITS),
                                 ("hardware", HARDWARE, HARDWARE_UNITS)):
        for p in presets.values():
            for f in units:
                s = names[f"{kind}:{p.name}.{f}"]
                assert s.value == getattr(p, f) and s.unit and len(s.origin) > 10
    # + the kv_width of the two models the serving figure uses + the PCIe raw rates + the
    # 16-bit storage of non-expert weights and KV cache + ZipMoE pools
    assert len(names) == len(SOURCES) == 5 * 7 + 2 + 4 * 4 + 4 * 6 + 3 + 2 + 7
    assumed = {s.name for s in SOURCES if s.is_assumption}
    assert "hardware:pcie5.link_gbps" in assumed and "hardware:pcie4.link_gbps" not in assumed
    assert "hardware:pcie4.link_latency_us" in assumed


def test_non_expert_and_kv_bytes_are_rows_of_the_table():
    """The 2 bytes of a non-expert parameter (model_bytes, non_expert_ms, a model file's size
    check) and of a KV-cache value (attention_ms) were numbers of the arithmetic with no row in
    the one table of sources."""
    from paging.cost.arith import attention_ms, model_bytes
    from paging.cost.presets import KV_BYTES, NON_EXPERT_BYTES

    names = {s.name: s for s in SOURCES}
    ne, kv = names["storage:non_expert.bytes_per_param"], names["storage:kv_cache.bytes_per_value"]
    assert (ne.value, kv.value) == (NON_EXPERT_BYTES, KV_BYTES) == (2, 2)
    assert ne.is_assumption and kv.is_assumption and "16-bit" in ne.origin + kv.origin
    m, hw = get_model("mixtral-8x7b"), get_hardware("pcie4")
    assert model_bytes(m) == 256 * 352_321_536 + ne.value * 1_605_244_027
    assert non_expert_ms(m, hw, 1) == ne.value * 1_605_244_027 / 32 / 1935e9 * 1e3
    assert attention_ms(m, hw, 10) == 10 * 2 * kv.value * 1024 / 1935e9 * 1e3


def test_doc_table_equals_rendered_sources():
    text = doc.DOC.read_text(encoding="utf-8")
    assert doc.extract_block(text) == doc.render_block(), \
        "docs/COST_MODEL.md is stale: run `python -m paging.cost.doc`"
    for s in SOURCES:
        assert f"| `{s.name}` |" in text


def test_doc_prose_names_the_gpus_of_the_measured_links():
    """The prose said the Gen3 and Gen4 rates were both measured on an A100 (BaM); the pcie3
    row cites a P100's bandwidthTest and a V100 in BaM's issue tracker."""
    text = " ".join(doc.DOC.read_text(encoding="utf-8").split())
    src = HARDWARE["pcie3"].sources["link_gbps"]
    assert "P100" in src and "V100" in src
    assert ("about 12 GB/s on Gen3 (a P100's CUDA bandwidthTest, a V100 in BaM's issue tracker) "
            "and 25 GB/s on Gen4 (an A100, BaM)") in text


def test_doc_script_names_the_file_it_wrote(tmp_path):
    """``python -m paging.cost.doc PATH`` rewrote PATH but printed docs/COST_MODEL.md."""
    import os
    import subprocess
    import sys

    out = tmp_path / "COST_MODEL.md"
    out.write_text(f"# x\n\n{doc.BEGIN}\nold\n{doc.END}\n", encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(doc.DOC.parents[1]))
    run = subprocess.run([sys.executable, "-m", "paging.cost.doc", str(out)], env=env,
                         capture_output=True, text=True, check=True)
    assert run.stdout == f"{out}: updated\n"
    assert doc.extract_block(out.read_text(encoding="utf-8")) == doc.render_block()


# --- names and user files ----

def test_unknown_names_list_the_valid_ones():
    with pytest.raises(PagingError, match="unknown model 'gpt'; valid: olmoe-1b-7b, mixtral-8x7b"):
        get_model("gpt")
    with pytest.raises(PagingError, match="unknown precision 'fp8'; valid: bf16, int8, int4, int2"):
        get_precision("fp8")
    with pytest.raises(PagingError,
                       match="unknown hardware 'nvlink'; valid: link-5gbps, pcie3, pcie4, pcie5"):
        get_hardware("nvlink")


GOOD_TOML = """name = "tiny"
source = "made up for a test"
n_layers = 2
n_experts = 4
top_k = 1
d_model = 8
d_ff = 16
n_matrices = 3
non_expert_params = 100
"""


def test_user_model_toml_and_json(tmp_path):
    p = tmp_path / "tiny.toml"
    p.write_text(GOOD_TOML)
    m = get_model(str(p))
    assert (m.name, m.n_layers, m.n_experts, m.expert_params) == ("tiny", 2, 4, 384)
    assert m.expert_bytes("bf16") == 768
    assert "made up for a test" in m.sources["d_ff"]
    data = {k: v for k, v in (line.split(" = ") for line in GOOD_TOML.splitlines())}
    j = tmp_path / "other.json"
    j.write_text(json.dumps({k: int(v) for k, v in data.items() if k not in ("name", "source")}))
    mj = get_model(str(j))
    assert mj.name == "other" and mj == m.__class__(**{**m.__dict__, "name": "other"})


@pytest.mark.parametrize("edit, message", [
    (lambda t: t + "colour = 3\n", "unknown key 'colour'"),
    (lambda t: t.replace("d_ff = 16\n", ""), "missing key 'd_ff'"),
    (lambda t: t.replace("top_k = 1", "top_k = 0"), "key 'top_k' must be a positive integer, "
                                                    "got 0"),
    (lambda t: t.replace("d_model = 8", "d_model = -8"), "key 'd_model' must be a positive"),
    (lambda t: t.replace("d_model = 8", "d_model = 8.5"), "key 'd_model' must be a positive"),
    (lambda t: t.replace("n_layers = 2", "n_layers = true"), "key 'n_layers' must be a positive"),
    (lambda t: t.replace('name = "tiny"', "name = 3"), "key 'name' must be a non-empty string"),
    (lambda t: t + "= broken", "not valid TOML"),
])
def test_user_model_errors_name_file_and_key(tmp_path, edit, message):
    p = tmp_path / "bad.toml"
    p.write_text(edit(GOOD_TOML))
    with pytest.raises(PagingError) as e:
        get_model(str(p))
    assert str(e.value).startswith(f"{p}:") and message in str(e.value)
    assert "\n" not in str(e.value)
    key = message.split("'")[1] if "key '" in message else None
    if key is not None and "missing" not in message:  # the key's line (it named none)
        assert e.value.line == edit(GOOD_TOML).splitlines().index(
            next(x for x in edit(GOOD_TOML).splitlines() if x.startswith(f"{key} "))) + 1



def test_user_model_errors_name_the_line_that_sets_the_key(tmp_path):
    """The line of the key's value: not a line of a multi-line string that reads like the key
    (line 3 below), and in JSON the last of a repeated key, the one the reader keeps (line 4;
    both named the first). A quoted TOML key has its line too."""
    p = tmp_path / "bad.toml"
    p.write_text('source = """\nmade up;\ntop_k = 1 in the paper\n"""\n'
                 + GOOD_TOML.replace("top_k = 1", "top_k = 0").replace(
                     'source = "made up for a test"\n', ""))
    with pytest.raises(PagingError, match="key 'top_k' must be a positive integer") as e:
        get_model(str(p))
    assert e.value.line == p.read_text().splitlines().index("top_k = 0") + 1 != 3
    p.write_text(GOOD_TOML.replace("top_k = 1", "'top_k' = 0"))
    with pytest.raises(PagingError, match="key 'top_k' must be a positive integer") as e:
        get_model(str(p))
    assert e.value.line == p.read_text().splitlines().index("'top_k' = 0") + 1
    j = tmp_path / "bad.json"
    j.write_text('{"n_layers": 2, "n_experts": 4, "top_k": 1,\n "d_model": 8, "d_ff": 16,\n'
                 ' "n_matrices": 3, "non_expert_params": 100,\n "top_k": 0}\n')
    with pytest.raises(PagingError, match="key 'top_k' must be a positive integer, got 0") as e:
        get_model(str(j))
    assert e.value.line == 4


def test_user_model_missing_file_and_bad_json(tmp_path):
    with pytest.raises(PagingError, match="cannot read the model file"):
        get_model(str(tmp_path / "nope.toml"))
    j = tmp_path / "x.json"
    j.write_text("[1, 2]")
    with pytest.raises(PagingError, match="one table/object of keys"):
        get_model(str(j))


# --- the command ----

def test_cli_presets_json(capsys):
    assert main(["cost", "presets", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert [m["name"] for m in rec["models"]] == list(MODELS)
    mix = rec["models"][1]
    assert mix["expert_bytes"] == {"bf16": 352_321_536, "int8": 176_291_840,
                                   "int4": 99_090_432, "int2": 55_050_240}
    assert mix["n_pages"] == 256 and mix["expert_params"] == 176_160_768
    assert mix["fields"]["d_ff"]["value"] == 14336 and "Mixtral" in mix["fields"]["d_ff"]["source"]
    assert [q["name"] for q in rec["precisions"]] == ["bf16", "int8", "int4", "int2"]
    # kv_width (the serving model's KV reads) is listed where a model has it, as in the table
    assert mix["fields"]["kv_width"] == {"value": 1024, "unit": OPTIONAL_MODEL_UNITS["kv_width"],
                                         "source": MODELS["mixtral-8x7b"].sources["kv_width"]}
    assert rec["models"][4]["fields"]["kv_width"]["value"] == 512
    assert "kv_width" not in rec["models"][0]["fields"]  # olmoe: not known
    pcie4 = rec["hardware"][2]
    assert pcie4["name"] == "pcie4" and pcie4["fields"]["link_gbps"] == {
        "value": 25.0, "unit": "GB/s", "source": HARDWARE["pcie4"].sources["link_gbps"]}


def test_cli_presets_text(capsys):
    assert main(["cost", "presets"]) == 0
    out = capsys.readouterr().out
    assert "model mixtral-8x7b: 32 layers x 8 experts" in out and "bf16 352,321,536" in out
    assert "hardware pcie5: link_gbps 50 GB/s" in out and "assumption" in out
    assert "mixtral-8x7b.kv_width" in out


@pytest.mark.parametrize("argv", [["cost"], ["cost", "nope"], ["cost", "presets", "--bad"]])
def test_cli_bad_input_exit_2_one_line(capsys, argv):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err


@needs_traces
def test_the_shipped_routing_logs_are_sized_by_their_ids_and_their_conversions_are_not(tmp_path):
    """The layout advice (--n-experts, --layers) is for files whose layout is their largest ids
    + 1: the three shipped routing formats (the prefill+decode dump's 'routing-jsonl-raw' was
    left out), not an .npz written from one."""
    from paging.cost.presets import sized_by_ids
    from paging.io import load, resolve_path, write

    for f in ("mixtral-8x7b-instruct-vllm/humaneval_2_routing.jsonl",
              "mixtral-8x7b-instruct-vllm/humaneval_p0_prefill_decode_raw.jsonl",
              "granite-3.0-1b-a400m-instruct/moe_expert_trace.json"):
        tr = load(resolve_path(f))[0]
        assert sized_by_ids(tr), (f, tr.meta.get("format"))
        write(tr, tmp_path / "t.npz")
        assert not sized_by_ids(load(tmp_path / "t.npz")[0])


def test_a_budget_below_one_byte_names_what_was_given():
    """A review: --budget-gb 1e-10 and --budget-pct 1e-9 became a budget of 0 bytes, refused as
    "the byte budget must be an integer >= 1, got 0", which names neither."""
    from paging.cost.arith import budget_bytes, share_budget

    assert budget_bytes(1e-9) == 1
    with pytest.raises(PagingError, match=r"^a budget of 1e-10 GB is less than one byte; "
                                          r"expected at least 1e-9 GB$"):
        budget_bytes(1e-10)
    with pytest.raises(PagingError, match=r"^a capacity share of 1e-09 % of mixtral-8x7b is "
                                          r"less than one byte; expected a share of about "
                                          r"1\.07e-09 % or more$"):
        share_budget(get_model("mixtral-8x7b"), 1e-9)


def test_capacity_counts_a_dist_policys_per_layer_shares():
    """A -dist policy splits a byte budget evenly over the layers: 5 % of Mixtral at int4
    (4,670,240,063 bytes, 99,090,432-byte experts) holds 47 experts shared, and one expert in
    each layer's 145,945,001 bytes, 32 in all (the capacity column said 47 for both)."""
    from paging.cost import share_budget
    from paging.cost.setup import CostSetup

    cm = CostSetup.from_names("mixtral-8x7b", "int4")
    b = share_budget(cm.model, 5)
    assert b == 4_670_240_063 and cm.expert_bytes == 99_090_432
    assert cm.capacity(None, b) == 47 == b // cm.expert_bytes
    assert cm.capacity(None, b, dist=True) == 32
    assert cm.capacity(47, None, dist=True) == 47      # (pages: the k given)
    # each layer's share one byte short of three experts: two in each of the 32 layers
    assert cm.capacity(None, 32 * (3 * cm.expert_bytes - 1), dist=True) == 64
    # a simulated run's row: its Result says it is per layer
    from paging.generators import zipf
    from paging.run import RunSpec, run

    tr = zipf(8, 32, 20, seed=0)
    rows = {p: run(RunSpec(p, budget=b, model="mixtral-8x7b", precision="int4"), [tr])[0]
            for p in ("lru", "lru-dist")}
    assert (rows["lru"]["capacity"], rows["lru-dist"]["capacity"]) == (47, 32)
