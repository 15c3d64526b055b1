"""GPU architecture descriptions for the synthetic ground-truth timing model.

The three configurations match the GCL-Sampler paper's platforms P1-P3 (Turing
RTX 2080 Ti, Ampere RTX 3080 Ti, Ada RTX 4090). Numbers come from public sources,
cited per field below:

- [TU] NVIDIA Turing GPU Architecture whitepaper (TU102), and the RTX 2080 Ti
  product page: 68 SMs, 1350/1545 MHz, 5.5 MB L2, 352-bit GDDR6 at 14 Gbps.
- [GA] NVIDIA Ampere GA102 GPU Architecture whitepaper, and the RTX 3080 Ti
  product page: 80 SMs, 1365/1665 MHz, 6 MB L2, 384-bit GDDR6X at 19 Gbps.
- [AD] NVIDIA Ada Lovelace GPU Architecture whitepaper (AD102), and the RTX 4090
  product page: 128 SMs, 2235/2520 MHz, 72 MB L2, 384-bit GDDR6X at 21 Gbps.
- [CG] CUDA C++ Programming Guide, "Features and Technical Specifications",
  table "Technical Specifications per Compute Capability" (CC 7.5 / 8.6 / 8.9):
  warps, CTAs, registers and shared memory per SM, shared-memory carveouts.
- [OC] CUDA Occupancy Calculator / ``cuda_occupancy.h`` allocation rules: register
  allocation unit 256 per warp, 4 sub-partitions per SM, shared-memory allocation
  unit (256 B on CC 7.5, 128 B on CC 8.x) and 1 KB system-reserved shared memory per
  CTA on CC 8.x.
- [MB] Published microbenchmarks (Jia et al., "Dissecting the NVIDIA Turing T4 GPU
  via Microbenchmarking", 2019; Chips and Cheese measurements of GA102/AD102).
  These are approximate and only set the *scale* of latencies and L2 bandwidth.
- [ASSUMED] Not published by NVIDIA; a modelling assumption (cache associativity).

Everything here feeds a synthetic analytical model, not a hardware simulator.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ArchConfig:
    """Resource limits, cache geometry, throughputs and latencies of one GPU.

    Throughputs are per SM per core clock, in warp-instructions (32 lanes) unless
    the name says otherwise; latencies are in core clock cycles.
    """

    name: str
    gpu: str
    compute_capability: int  # 75, 86, 89
    sm_count: int
    clock_mhz: float  # boost clock; the model runs every SM at this clock
    base_clock_mhz: float
    # ---- occupancy limits ------------------------------------------------
    max_warps_per_sm: int
    max_ctas_per_sm: int
    max_threads_per_cta: int
    regs_per_sm: int
    max_regs_per_thread: int
    reg_alloc_unit: int  # registers, per warp
    sub_partitions: int
    max_smem_per_sm: int  # bytes, largest carveout
    max_smem_per_cta: int  # bytes
    smem_alloc_unit: int  # bytes
    smem_reserved_per_cta: int  # bytes the driver reserves per CTA
    smem_carveouts_kb: tuple[int, ...]  # allowed shared-memory carveouts
    # ---- memory hierarchy ---------------------------------------------------
    l1_unified_kb: int  # L1 data cache + shared memory per SM
    l1_assoc: int
    l2_kb: int
    l2_assoc: int
    line_bytes: int
    sector_bytes: int
    dram_bw_gbs: float  # peak, GB/s
    l2_bw_bytes_per_clk: float  # whole GPU, bytes per core clock
    l1_sectors_per_clk: float  # per SM
    # ---- pipe throughputs (warp-instructions / clk / SM) --------------------
    issue_per_clk: float
    fp32_per_clk: float
    int_per_clk: float
    fp64_per_clk: float
    sfu_per_clk: float
    lsu_per_clk: float
    tensor_fma_per_clk: float  # FP16 multiply-adds per clk per SM (dense)
    # ---- latencies (cycles) ---------------------------------------------------
    alu_lat: float
    fp64_lat: float
    sfu_lat: float
    tensor_lat: float
    shared_lat: float
    l1_lat: float
    l2_lat: float
    dram_lat: float
    branch_lat: float
    sync_lat: float

    @property
    def clock_ghz(self) -> float:
        return self.clock_mhz / 1000.0

    @property
    def dram_bytes_per_clk(self) -> float:
        """Whole-GPU DRAM bytes per core clock at the modelled clock."""
        return self.dram_bw_gbs / self.clock_ghz


TURING = ArchConfig(
    name="turing",
    gpu="GeForce RTX 2080 Ti (TU102)",
    compute_capability=75,
    sm_count=68,  # [TU] 68 SMs enabled on RTX 2080 Ti
    clock_mhz=1545.0,  # [TU] reference boost clock
    base_clock_mhz=1350.0,  # [TU] base clock
    max_warps_per_sm=32,  # [CG] CC 7.5: 1024 threads / SM
    max_ctas_per_sm=16,  # [CG] CC 7.5
    max_threads_per_cta=1024,  # [CG]
    regs_per_sm=65536,  # [CG] 64K 32-bit registers / SM
    max_regs_per_thread=255,  # [CG]
    reg_alloc_unit=256,  # [OC]
    sub_partitions=4,  # [TU] 4 processing blocks per SM
    max_smem_per_sm=64 * 1024,  # [CG] CC 7.5: 64 KB
    max_smem_per_cta=64 * 1024,  # [CG] CC 7.5: 64 KB (opt-in)
    smem_alloc_unit=256,  # [OC] CC 7.5
    smem_reserved_per_cta=0,  # [OC] CC 7.5 reserves none
    smem_carveouts_kb=(32, 64),  # [TU] 96 KB unified: 64 KB L1 + 32 KB smem or 32 + 64
    l1_unified_kb=96,  # [TU] 96 KB L1/shared per SM
    l1_assoc=4,  # [ASSUMED]
    l2_kb=5632,  # [TU] 5.5 MB L2 on RTX 2080 Ti
    l2_assoc=16,  # [ASSUMED]
    line_bytes=128,  # [MB] 128 B lines, 32 B sectors
    sector_bytes=32,  # [MB]
    dram_bw_gbs=616.0,  # [TU] 352 bit x 14 Gbps / 8
    l2_bw_bytes_per_clk=1536.0,  # [MB] ~2.4 TB/s at 1.545 GHz (approximate)
    l1_sectors_per_clk=4.0,  # [TU] 128 B/clk/SM L1 bandwidth = 4 sectors
    issue_per_clk=4.0,  # [TU] 4 schedulers x 1 warp-inst/clk
    fp32_per_clk=2.0,  # [TU] 64 FP32 lanes / SM
    int_per_clk=2.0,  # [TU] 64 INT32 lanes / SM
    fp64_per_clk=2.0 / 32.0,  # [TU] 2 FP64 lanes / SM (1/32 rate)
    sfu_per_clk=0.5,  # [TU] 16 SFU lanes / SM
    lsu_per_clk=1.0,  # [TU] 32 lanes/clk address generation (128 B/clk smem)
    tensor_fma_per_clk=512.0,  # [TU] 8 tensor cores x 64 FP16 FMA/clk
    alu_lat=4.0,  # [MB] dependent FFMA/IADD3 ~4 cycles
    fp64_lat=48.0,  # [MB] approximate, GeForce FP64 is slow
    sfu_lat=18.0,  # [MB]
    tensor_lat=32.0,  # [MB] HMMA.1688 latency order of magnitude
    shared_lat=24.0,  # [MB] Jia et al.: ~19-26 cycles
    l1_lat=32.0,  # [MB] Jia et al. T4: ~32 cycles
    l2_lat=188.0,  # [MB] Jia et al. T4: ~188 cycles
    dram_lat=430.0,  # [MB] approximate
    branch_lat=8.0,  # [ASSUMED]
    sync_lat=20.0,  # [ASSUMED]
)

AMPERE = ArchConfig(
    name="ampere",
    gpu="GeForce RTX 3080 Ti (GA102)",
    compute_capability=86,
    sm_count=80,  # [GA] 80 SMs enabled on RTX 3080 Ti
    clock_mhz=1665.0,  # [GA] reference boost clock
    base_clock_mhz=1365.0,  # [GA] base clock
    max_warps_per_sm=48,  # [CG] CC 8.6: 1536 threads / SM
    max_ctas_per_sm=16,  # [CG] CC 8.6
    max_threads_per_cta=1024,  # [CG]
    regs_per_sm=65536,  # [CG]
    max_regs_per_thread=255,  # [CG]
    reg_alloc_unit=256,  # [OC]
    sub_partitions=4,  # [GA]
    max_smem_per_sm=100 * 1024,  # [CG] CC 8.6: 100 KB
    max_smem_per_cta=99 * 1024,  # [CG] CC 8.6: 99 KB (opt-in)
    smem_alloc_unit=128,  # [OC] CC 8.x
    smem_reserved_per_cta=1024,  # [OC] CC 8.x: 1 KB reserved per CTA
    smem_carveouts_kb=(0, 8, 16, 32, 64, 100),  # [CG] CC 8.6 carveouts
    l1_unified_kb=128,  # [GA] 128 KB L1/shared per SM
    l1_assoc=4,  # [ASSUMED]
    l2_kb=6144,  # [GA] 6 MB L2 on RTX 3080 Ti
    l2_assoc=16,  # [ASSUMED]
    line_bytes=128,  # [MB]
    sector_bytes=32,  # [MB]
    dram_bw_gbs=912.4,  # [GA] 384 bit x 19 Gbps / 8
    l2_bw_bytes_per_clk=2048.0,  # [MB] ~3.4 TB/s at 1.665 GHz (approximate)
    l1_sectors_per_clk=4.0,  # [GA] 128 B/clk/SM
    issue_per_clk=4.0,  # [GA] 4 schedulers
    fp32_per_clk=4.0,  # [GA] 128 FP32 lanes / SM (2x Turing)
    int_per_clk=2.0,  # [GA] 64 INT32-capable lanes / SM
    fp64_per_clk=2.0 / 32.0,  # [GA] 2 FP64 units / SM (1/64 of FP32)
    sfu_per_clk=0.5,  # [GA] 16 SFU lanes / SM
    lsu_per_clk=1.0,  # [GA] 128 B/clk smem
    tensor_fma_per_clk=512.0,  # [GA] 4 3rd-gen tensor cores, 128 dense FP16 FMA/clk each
    alu_lat=4.0,  # [MB]
    fp64_lat=48.0,  # [MB] approximate
    sfu_lat=18.0,  # [MB]
    tensor_lat=32.0,  # [MB]
    shared_lat=23.0,  # [MB]
    l1_lat=33.0,  # [MB]
    l2_lat=200.0,  # [MB] approximate
    dram_lat=470.0,  # [MB] approximate (GDDR6X)
    branch_lat=8.0,  # [ASSUMED]
    sync_lat=20.0,  # [ASSUMED]
)

ADA = ArchConfig(
    name="ada",
    gpu="GeForce RTX 4090 (AD102)",
    compute_capability=89,
    sm_count=128,  # [AD] 128 SMs enabled on RTX 4090
    clock_mhz=2520.0,  # [AD] reference boost clock
    base_clock_mhz=2235.0,  # [AD] base clock
    max_warps_per_sm=48,  # [CG] CC 8.9: 1536 threads / SM
    max_ctas_per_sm=24,  # [CG] CC 8.9
    max_threads_per_cta=1024,  # [CG]
    regs_per_sm=65536,  # [CG]
    max_regs_per_thread=255,  # [CG]
    reg_alloc_unit=256,  # [OC]
    sub_partitions=4,  # [AD]
    max_smem_per_sm=100 * 1024,  # [CG] CC 8.9: 100 KB
    max_smem_per_cta=99 * 1024,  # [CG] CC 8.9: 99 KB (opt-in)
    smem_alloc_unit=128,  # [OC] CC 8.x
    smem_reserved_per_cta=1024,  # [OC] CC 8.x
    smem_carveouts_kb=(0, 8, 16, 32, 64, 100),  # [CG] CC 8.9 carveouts
    l1_unified_kb=128,  # [AD] 128 KB L1/shared per SM
    l1_assoc=4,  # [ASSUMED]
    l2_kb=73728,  # [AD] 72 MB L2 on RTX 4090
    l2_assoc=16,  # [ASSUMED]
    line_bytes=128,  # [MB]
    sector_bytes=32,  # [MB]
    dram_bw_gbs=1008.0,  # [AD] 384 bit x 21 Gbps / 8
    l2_bw_bytes_per_clk=2048.0,  # [MB] ~5 TB/s at 2.52 GHz (approximate)
    l1_sectors_per_clk=4.0,  # [AD] 128 B/clk/SM
    issue_per_clk=4.0,  # [AD] 4 schedulers
    fp32_per_clk=4.0,  # [AD] 128 FP32 lanes / SM
    int_per_clk=2.0,  # [AD] 64 INT32-capable lanes / SM
    fp64_per_clk=2.0 / 32.0,  # [AD] 2 FP64 units / SM
    sfu_per_clk=0.5,  # [AD] 16 SFU lanes / SM
    lsu_per_clk=1.0,  # [AD] 128 B/clk smem
    tensor_fma_per_clk=512.0,  # [AD] 4 4th-gen tensor cores, dense FP16 (FP32 acc. halves this on GeForce; ignored)
    alu_lat=4.0,  # [MB]
    fp64_lat=48.0,  # [MB] approximate
    sfu_lat=18.0,  # [MB]
    tensor_lat=32.0,  # [MB]
    shared_lat=23.0,  # [MB]
    l1_lat=33.0,  # [MB]
    l2_lat=270.0,  # [MB] larger, farther L2 (approximate)
    dram_lat=560.0,  # [MB] approximate; higher clock -> more cycles
    branch_lat=8.0,  # [ASSUMED]
    sync_lat=20.0,  # [ASSUMED]
)

ARCHS: dict[str, ArchConfig] = {"turing": TURING, "ampere": AMPERE, "ada": ADA}
"""The paper's P1 (Turing), P2 (Ampere) and P3 (Ada) platforms, keyed by short name."""
