"""The GPU catalogue: memory, peak FLOP/s and links of the accelerators parc knows.

Conventions, applied to every entry:
- Peak FLOP/s are *dense* tensor-core figures (vendor datasheets quote 2:4-sparse figures twice as
  high; those are never used here).
- `link_bandwidth` is the intra-node (NVLink / Infinity Fabric) bandwidth of one GPU in *one
  direction*: datasheets quote the bidirectional total, which is twice this.
- `hbm` is the memory a training process can see: `nvidia-smi`'s total where it is known, the
  datasheet figure otherwise.
- `network` is the node's scale-out fabric used by training collectives (storage NICs excluded).

- `price` (dollars per GPU-hour) is a public on-demand list price with its source and date, the
  default of `hardware { price ... }` for the training budget's cost. Entries without a price
  checked against a public list have none: a spec states its own (`price 2.50 $/gpu-hour`), which
  is what anyone with a negotiated or reserved rate should do anyway.

A spec can define its own GPU (`gpu my-gpu { hbm 96 GiB ... }`) or override one field of an entry
here (`gpu h100-sxm { hbm 96 GiB }`).
"""

from __future__ import annotations

GiB = 1 << 30
MiB = 1 << 20
GB = 10**9
TFLOPS = 10**12
GBps = 10**9  # bytes per second
Gbps = 10**9 // 8  # bits per second, in bytes per second

# Each entry: the fields of `parc.plan.Gpu`. `generation` keys the achievable-efficiency
# constants of the time model (one per generation, never per model).
GPUS: dict[str, dict] = {
    "a100-40gb": dict(
        description="NVIDIA A100 SXM4 40 GB",
        generation="ampere",
        hbm_bytes=40 * GiB,  # datasheet: 40 GB HBM2 (5 stacks x 8 GiB)
        bf16_flops=312 * TFLOPS,  # datasheet: 312 TFLOPS BF16 dense (624 sparse)
        fp8_flops=None,  # Ampere has no FP8 tensor cores
        sms=108,  # A100 whitepaper: 108 SMs enabled (of 128 on GA100)
        link_bandwidth=300 * GBps,  # NVLink 3: 12 links x 25 GB/s per direction (600 GB/s bidir)
        nvlink_domain=8,  # HGX A100: 8 GPUs on NVSwitch
        gpus_per_node=8,
        nics=8,
        nic_bandwidth=200 * Gbps,  # DGX A100: 8x ConnectX-6 HDR 200 Gb/s for compute
        price=32.7726 / 8,  # AWS p4d.24xlarge (8x A100 40 GB) on-demand, us-east-1: $32.7726/h
        price_source="AWS p4d.24xlarge on-demand list price, us-east-1: $32.77/h for 8 GPUs",
    ),
    "a100-80gb": dict(
        description="NVIDIA A100 SXM4 80 GB",
        generation="ampere",
        hbm_bytes=81920 * MiB,  # nvidia-smi: 81,920 MiB (datasheet 80 GB HBM2e)
        bf16_flops=312 * TFLOPS,  # datasheet: 312 TFLOPS BF16 dense
        fp8_flops=None,
        sms=108,  # A100 whitepaper: 108 SMs
        link_bandwidth=300 * GBps,  # NVLink 3, 600 GB/s bidirectional
        nvlink_domain=8,
        gpus_per_node=8,
        nics=8,
        nic_bandwidth=200 * Gbps,  # DGX A100 / Selene: 8x HDR 200 Gb/s
        price=40.9657 / 8,  # AWS p4de.24xlarge (8x A100 80 GB) on-demand, us-east-1: $40.9657/h
        price_source="AWS p4de.24xlarge on-demand list price, us-east-1: $40.97/h for 8 GPUs",
    ),
    "h100-sxm": dict(
        description="NVIDIA H100 SXM5 80 GB",
        generation="hopper",
        hbm_bytes=81559 * MiB,  # nvidia-smi: 81,559 MiB (datasheet 80 GB HBM3)
        bf16_flops=989 * TFLOPS,  # datasheet: 989.4 TFLOPS BF16 dense (1,979 sparse)
        fp8_flops=1979 * TFLOPS,  # datasheet: 1,979 TFLOPS FP8 dense (3,958 sparse)
        sms=132,  # H100 whitepaper: 132 SMs on the SXM5 part (144 on the full GH100)
        link_bandwidth=450 * GBps,  # NVLink 4: 18 links x 25 GB/s per direction (900 GB/s bidir)
        nvlink_domain=8,  # HGX H100: 8 GPUs on NVSwitch
        gpus_per_node=8,
        nics=8,
        nic_bandwidth=400 * Gbps,  # DGX H100: 8x ConnectX-7 NDR 400 Gb/s
        price=98.32 / 8,  # AWS p5.48xlarge (8x H100 SXM) on-demand, us-east-1: $98.32/h
        price_source="AWS p5.48xlarge on-demand list price, us-east-1, July 2023: $98.32/h for 8 GPUs",
    ),
    "h200": dict(
        description="NVIDIA H200 SXM 141 GB",
        generation="hopper",
        hbm_bytes=143771 * MiB,  # nvidia-smi: 143,771 MiB (datasheet 141 GB HBM3e)
        bf16_flops=989 * TFLOPS,  # datasheet: same compute as H100 SXM
        fp8_flops=1979 * TFLOPS,  # datasheet
        sms=132,  # same GH100 die as H100 SXM: 132 SMs
        link_bandwidth=450 * GBps,  # NVLink 4, 900 GB/s bidirectional
        nvlink_domain=8,
        gpus_per_node=8,
        nics=8,
        nic_bandwidth=400 * Gbps,  # HGX H200 reference: 8x ConnectX-7 400 Gb/s
    ),
    "h800": dict(
        description="NVIDIA H800 SXM5 80 GB (export variant)",
        generation="hopper",
        hbm_bytes=81559 * MiB,  # same HBM3 package as H100 SXM
        bf16_flops=989 * TFLOPS,  # same compute as H100 SXM
        fp8_flops=1979 * TFLOPS,
        sms=132,  # same GH100 die as H100 SXM: 132 SMs
        link_bandwidth=200 * GBps,  # NVLink cut to 400 GB/s bidirectional (8 links)
        nvlink_domain=8,
        gpus_per_node=8,
        nics=8,
        nic_bandwidth=400 * Gbps,  # DeepSeek-V3 report: 8x 400 Gb/s InfiniBand per node
    ),
    "b200": dict(
        description="NVIDIA B200 (DGX B200)",
        generation="blackwell",
        hbm_bytes=180 * GB,  # DGX B200 datasheet: 1,440 GB for 8 GPUs
        bf16_flops=2250 * TFLOPS,  # DGX B200: 72 PFLOPS FP8 sparse / 8 / 2 = 4.5 FP8 dense; BF16 half
        fp8_flops=4500 * TFLOPS,
        fp4_flops=9000 * TFLOPS,  # DGX B200: 144 PFLOPS FP4 sparse / 8 / 2
        sms=148,  # Blackwell architecture technical brief: 148 SMs per B200 (2 dies x 74)
        link_bandwidth=900 * GBps,  # NVLink 5: 1.8 TB/s bidirectional
        nvlink_domain=8,
        gpus_per_node=8,
        nics=8,
        nic_bandwidth=400 * Gbps,  # DGX B200: 8x ConnectX-7 400 Gb/s
    ),
    "gb200-nvl72": dict(
        description="NVIDIA GB200 in an NVL72 rack (18 trays x 4 GPUs, one NVLink domain)",
        generation="blackwell",
        hbm_bytes=186 * GB,  # NVL72 datasheet: 13.4 TB HBM3e for 72 GPUs
        bf16_flops=2500 * TFLOPS,  # NVL72: 360 PFLOPS BF16 sparse / 72 = 5 sparse, 2.5 dense
        fp8_flops=5000 * TFLOPS,  # NVL72: 720 PFLOPS FP8 sparse / 72 / 2
        fp4_flops=10000 * TFLOPS,  # NVL72: 1,440 PFLOPS FP4 sparse / 72 / 2
        sms=148,  # the same B200 GPU: 148 SMs
        link_bandwidth=900 * GBps,  # NVLink 5: 1.8 TB/s bidirectional per GPU
        nvlink_domain=72,  # one NVLink switch domain spans the rack
        gpus_per_node=4,  # a compute tray is the OS node: 2 Grace CPUs + 4 GPUs
        nics=4,
        nic_bandwidth=400 * Gbps,  # GB200 compute tray: 4x ConnectX-7 400 Gb/s
    ),
    "b300": dict(
        description="NVIDIA B300 (DGX B300 / HGX B300, Blackwell Ultra)",
        generation="blackwell",
        hbm_bytes=288 * GB,  # DGX B300 datasheet: 2.3 TB HBM3e for 8 GPUs; NVIDIA's Blackwell Ultra brief: 288 GB
        bf16_flops=2250 * TFLOPS,  # DGX B300: 72 PFLOPS FP8 training (sparse) / 8 / 2 = 4.5 FP8 dense; BF16 half
        fp8_flops=4500 * TFLOPS,  # HGX B300: FP8 4.5 PFLOPS dense per GPU, as B200 (Blackwell Ultra adds FP4, not FP8)
        fp4_flops=13500 * TFLOPS,  # HGX B300: 108 PFLOPS FP4 dense / 8 (144 sparse)
        sms=160,  # NVIDIA, "Inside NVIDIA Blackwell Ultra" (2025-08): 160 SMs, 640 fifth-generation tensor cores
        link_bandwidth=900 * GBps,  # NVLink 5: 1.8 TB/s bidirectional
        nvlink_domain=8,
        gpus_per_node=8,
        nics=8,
        nic_bandwidth=800 * Gbps,  # DGX B300: 8x ConnectX-8 SuperNIC, 800 Gb/s each
    ),
    "gb300-nvl72": dict(
        description="NVIDIA GB300 in an NVL72 rack (Blackwell Ultra; 18 trays x 4 GPUs, one NVLink domain)",
        generation="blackwell",
        hbm_bytes=288 * GB,  # GB300 NVL72: 20.7 TB HBM3e for 72 GPUs, 288 GB per GPU (12-high stacks)
        bf16_flops=2500 * TFLOPS,  # GB300 NVL72: 360 PFLOPS FP8 dense / 72 = 5 FP8 dense; BF16 half, as GB200
        fp8_flops=5000 * TFLOPS,
        fp4_flops=15000 * TFLOPS,  # GB300 NVL72: 1,080 PFLOPS FP4 dense / 72 (1.5x GB200: Blackwell Ultra brief)
        sms=160,  # NVIDIA, "Inside NVIDIA Blackwell Ultra": 160 SMs
        link_bandwidth=900 * GBps,  # NVLink 5: 1.8 TB/s bidirectional per GPU
        nvlink_domain=72,  # one NVLink switch domain spans the rack
        gpus_per_node=4,  # a compute tray is the OS node: 2 Grace CPUs + 4 GPUs
        nics=4,
        nic_bandwidth=800 * Gbps,  # GB300 compute tray: 4x ConnectX-8, 800 Gb/s each (72 per rack)
    ),
    "mi300x": dict(
        description="AMD Instinct MI300X 192 GB",
        generation="cdna3",
        hbm_bytes=192 * GiB,  # datasheet: 192 GB HBM3 (8 stacks x 24 GiB)
        bf16_flops=1307 * TFLOPS,  # datasheet: 1,307.4 TFLOPS BF16 dense
        fp8_flops=2615 * TFLOPS,  # datasheet: 2,614.9 TFLOPS FP8 dense
        sms=304,  # CDNA 3 whitepaper: 304 compute units
        link_bandwidth=448 * GBps,  # Infinity Fabric: 7 links x 64 GB/s per direction (896 bidir)
        nvlink_domain=8,  # 8 GPUs fully connected on the OAM baseboard
        gpus_per_node=8,
        nics=8,
        nic_bandwidth=400 * Gbps,  # typical MI300X platform: 8x 400 Gb/s NICs
    ),
}

PRECISION_PEAK = {"fp8": "fp8", "nvfp4": "fp4"}
"""A quantized precision -> the dense peak its products run at: the spec's GPU key and
`timing.Hardware`'s field, the catalogue's `<key>_flops`; bf16 and fp16 run at `bf16`, and so
does a precision on a part without that peak (a check says so: E0626, E0629)."""

FP4_SPARSE_FLOPS: dict[str, float] = {
    "b200": 18000 * TFLOPS,  # DGX B200: 144 PFLOPS FP4 (2:4 sparse) for 8 GPUs
    "gb200-nvl72": 20000 * TFLOPS,  # GB200 NVL72: 1,440 PFLOPS FP4 (sparse) for 72 GPUs
    "b300": 18000 * TFLOPS,  # HGX B300: 144 PFLOPS FP4 sparse for 8 GPUs (108 dense: Blackwell Ultra's dense FP4 is 3/4 of sparse)
    "gb300-nvl72": 20000 * TFLOPS,  # GB300 NVL72: 1,440 PFLOPS FP4 sparse for 72 GPUs (1,080 dense)
}
"""The 2:4-sparse FP4 peaks datasheets quote beside the dense ones (`fp4_flops`): never a rate parc
charges, only a figure a published row may state as its "peak" (benchmarks/published.py reads it
as the row's MFU convention). Not twice the dense peak on Blackwell Ultra."""

# Names people write for the same part; never one that fits two parts (`a100`: 40 or 80 GB).
ALIASES: dict[str, str] = {
    "a100-sxm4-40gb": "a100-40gb",
    "a100-sxm4-80gb": "a100-80gb",
    "h100": "h100-sxm",
    "h100-sxm5": "h100-sxm",
    "h100-80gb": "h100-sxm",
    "h100-sxm5-80gb": "h100-sxm",
    "h200-sxm": "h200",
    "gb200": "gb200-nvl72",
    "b200-sxm": "b200",
    "gb300": "gb300-nvl72",
    "b300-sxm": "b300",
}

# Intra-node links a placement may name, and whether they form an NVLink-class domain.
LINKS: dict[str, str] = {
    "nvlink": "NVLink / NVSwitch: the GPU's full intra-node bandwidth",
    "nvl72": "NVLink switch domain of a GB200 or GB300 NVL72 rack (72 GPUs)",
    "xgmi": "AMD Infinity Fabric between the GPUs of one node",
    "pcie": "PCIe only: no NVLink; intra-node traffic at PCIe Gen5 x16 speed",
}

PCIE_BANDWIDTH = 64 * GBps  # PCIe Gen5 x16, per direction (128 GB/s bidirectional)

NVLS_GENERATIONS = ("hopper", "blackwell")
"""Generations whose NVSwitches reduce (NVLink SHARP, NCCL's NVLS): the third-generation NVSwitch of
Hopper and Blackwell systems; Ampere's does not (NCCL's `nvlsEfficiency` is 0 there)."""

NVSWITCH_DOMAIN = 8
"""The smallest NVLink domain built around NVSwitches (an HGX board of 8 GPUs); smaller ones
(2- and 4-GPU boards) link their GPUs directly and have no switch to reduce in."""


def nvls_capable(link: str, generation: str, domain: int) -> bool:
    """Whether NCCL could reduce in this cluster's NVSwitches: an NVLink (or NVL72) domain of
    `NVSWITCH_DOMAIN` or more GPUs of a generation in `NVLS_GENERATIONS`. What `nvls on` requires
    (E0373) and where the generated job's README mentions NCCL's own NVLS default."""
    return link in ("nvlink", "nvl72") and generation in NVLS_GENERATIONS and domain >= NVSWITCH_DOMAIN

# The GPU's link to its host's memory (activation offloading, `train { offload-activations N }`):
# per part, the link's peak bandwidth in one direction, the GPUs that share it, and the host
# memory's bandwidth behind it where that is the narrower (None: DDR of a two-socket x86 host,
# far above one PCIe link). A GPU's share, one direction, is min(link, memory) / sharing GPUs;
# `hardware { host-bandwidth ... }` replaces it (a board with another link or switch).
PCIE_GEN4_X16 = 32 * GBps  # 16 GT/s x 16 lanes, 128b/130b: 31.5 GB/s per direction (PCI-SIG, PCIe 4.0)
_A100_HOST = dict(link=PCIE_GEN4_X16, sharing=1, memory=None,
                  source="A100 SXM4 datasheet: PCIe Gen4 x16, 64 GB/s bidirectional")
_H100_HOST = dict(link=PCIE_BANDWIDTH, sharing=1, memory=None,
                  source="H100 SXM5 datasheet: PCIe Gen5 x16, 128 GB/s bidirectional (H800: the same board)")
HOST_LINKS: dict[str, dict] = {
    "a100-40gb": _A100_HOST,
    "a100-80gb": _A100_HOST,
    "h100-sxm": _H100_HOST,
    "h200": dict(link=PCIE_BANDWIDTH, sharing=1, memory=None,
                 source="H200 SXM datasheet: PCIe Gen5 x16, 128 GB/s bidirectional"),
    "h800": _H100_HOST,
    "b200": dict(link=PCIE_BANDWIDTH, sharing=1, memory=None,
                 source="HGX B200: PCIe Gen5 x16 per GPU, 128 GB/s bidirectional"),
    "gb200-nvl72": dict(link=450 * GBps, sharing=2, memory=512 * GBps,
                        source="GB200 NVL72 datasheet: NVLink-C2C 900 GB/s bidirectional per Grace-Blackwell "
                               "superchip (1 Grace, 2 GPUs); Grace's LPDDR5X up to 512 GB/s (Grace CPU "
                               "datasheet), both shared by the superchip's 2 GPUs"),
    "b300": dict(link=2 * PCIE_BANDWIDTH, sharing=1, memory=None,
                 source="HGX B300: PCIe Gen6 x16 per GPU, 256 GB/s bidirectional"),
    "gb300-nvl72": dict(link=450 * GBps, sharing=2, memory=512 * GBps,
                        source="GB300 NVL72: NVLink-C2C 900 GB/s bidirectional per Grace and its two Blackwell "
                               "Ultra GPUs (a tray: 2 Grace, 4 GPUs); Grace's LPDDR5X up to 512 GB/s, shared "
                               "by the two"),
    "mi300x": dict(link=PCIE_BANDWIDTH, sharing=1, memory=None,
                   source="MI300X OAM datasheet: PCIe Gen5 x16 host interface, 128 GB/s bidirectional"),
}


def host_bandwidth(name: str) -> float | None:
    """One GPU's share of its link to host memory, bytes/s in one direction (None: a GPU the
    catalogue does not have: a spec states `host-bandwidth`)."""
    entry = HOST_LINKS.get(name)
    if entry is None:
        return None
    memory = entry["memory"] or entry["link"]
    return min(entry["link"], memory) / entry["sharing"]
