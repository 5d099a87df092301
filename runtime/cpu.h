/* cpu.h - the host CPU's features by LLVM name (runtime internal). */
#ifndef ICC_RT_CPU_H
#define ICC_RT_CPU_H

/* Internal to the runtime: hidden from a model.so's exports. */
#pragma GCC visibility push(hidden)

/* 1 when this CPU (and the OS, for register state such as AVX-512 and
 * AMX) supports the feature named as LLVM spells it ("avx2", "amx-tile",
 * "neon"), else 0. A name this runtime does not know is 0, so a model
 * asking for it fails to load instead of faulting. A leading '+' is
 * accepted. Thread-safe; the first call probes the CPU. */
int icc_cpu_has(const char *feature);

/* 1 when this runtime knows the feature name for this architecture (the
 * code generator may use it to keep only checkable names in
 * icc_model_desc.cpu_features), else 0. */
int icc_cpu_known(const char *feature);

/* Makes a known feature usable by this process where the OS requires a
 * request first (Linux: AMX tile data via arch_prctl). Returns 0, or -1
 * when the OS refuses. A no-op for other features. */
int icc_cpu_enable(const char *feature);

#pragma GCC visibility pop

#endif
