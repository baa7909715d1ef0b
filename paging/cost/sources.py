"""Where every number of the cost model comes from.

A :class:`Source` is one quantity with its value, unit and origin: a citation, or
``"assumption: why"`` when no source fixes it. :data:`paging.cost.SOURCES` lists every input
number of every preset; ``docs/COST_MODEL.md`` renders that list (:mod:`paging.cost.doc`), and a
test checks that the two agree, so the document cannot drift from the code.
"""

from __future__ import annotations

from dataclasses import dataclass

# Citations used by several presets, written once.
SPECMD_T3 = ("SpecMD (papers/specmd_least-stale.txt), App. E Table 3 (its 'GB'/'MB' are GiB/MiB, "
             "see docs/COST_MODEL.md)")
SPECMD_51 = ("SpecMD (papers/specmd_least-stale.txt), Sec. 5.1: 'device native bandwidth, which on "
             "our device measures on average 5 GB/s'")
A100_DATASHEET = ("NVIDIA A100 Tensor Core GPU datasheet "
                  "(nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf), column 'A100 80GB PCIe'")
PCISIG = ("PCI-SIG, PCI Express Base Specification rev. {rev}: {gt} GT/s per lane, 128b/130b "
          "encoding")
HOST_LATENCY = ("assumption: fixed cost of one cudaMemcpyAsync from pinned host memory (launch, "
                "DMA set-up, completion); order of 10 us, not measured here")
SSD_LATENCY = ("assumption: first-byte latency of one NVMe read (NAND read time plus the NVMe "
               "command and file-system path), typically 50-100 us; the round upper value taken")


@dataclass(frozen=True)
class Source:
    """One number of the cost model and where it comes from.

    Parameters
    ----------
    name:
        ``"<kind>:<preset>.<field>"``, e.g. ``"model:mixtral-8x7b.d_ff"``.
    value:
        The number as the code uses it.
    unit:
        Its unit (``"bytes"``, ``"GB/s"`` with 1 GB = 1e9 bytes, ``"us"``, ``"TFLOP/s"``, ...).
    origin:
        A citation, or ``"assumption: ..."`` saying why the value was chosen.
    """

    name: str
    value: int | float
    unit: str
    origin: str

    @property
    def is_assumption(self) -> bool:
        return self.origin.startswith("assumption")
