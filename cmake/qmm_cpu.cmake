# The CPU backend (src/cpu). The portable kernels build everywhere; on x86-64 each instruction set's
# kernels are their own translation units compiled with that set's flags only, and the backend picks
# one at run time (cpuid + xgetbv), so the library runs on any x86-64.
include(CheckCCompilerFlag)

list(APPEND QMM_SOURCES
  src/cpu/backend.c src/cpu/isa.c src/cpu/threadpool.c src/cpu/layout.c src/cpu/driver.c src/cpu/dispatch.c
  src/cpu/measure.c src/cpu/grouped.c
  src/cpu/kernels_generic.c)
set(QMM_CPU_DEFINITIONS "")

if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64|x64)$" AND CMAKE_C_COMPILER_ID MATCHES "GNU|Clang")
  set(qmm_avx2_flags -mavx2 -mfma -mf16c)
  set(qmm_avx512_flags -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma -mf16c)
  check_c_compiler_flag("-mavx512f -mavx512bw -mavx512vl -mavx512dq" QMM_CC_AVX512)
  check_c_compiler_flag("-mavx512bf16" QMM_CC_AVX512BF16)
  check_c_compiler_flag("-mavx512vbmi" QMM_CC_AVX512VBMI)
  set(qmm_avx2_sources src/cpu/x86/gemv_avx2.c src/cpu/x86/gemm_avx2.c)
  list(APPEND QMM_SOURCES ${qmm_avx2_sources})
  set_source_files_properties(${qmm_avx2_sources} PROPERTIES COMPILE_OPTIONS "${qmm_avx2_flags}")
  list(APPEND QMM_CPU_DEFINITIONS QMM_CPU_X86 QMM_CPU_AVX2)
  if(QMM_CC_AVX512)
    set(qmm_avx512_sources src/cpu/x86/gemv_avx512.c src/cpu/x86/gemm_avx512.c)
    list(APPEND QMM_SOURCES ${qmm_avx512_sources})
    set_source_files_properties(${qmm_avx512_sources} PROPERTIES COMPILE_OPTIONS "${qmm_avx512_flags}")
    list(APPEND QMM_CPU_DEFINITIONS QMM_CPU_AVX512)
    if(QMM_CC_AVX512BF16)
      # The bf16 dot-product kernels: only this unit may contain AVX512-BF16 instructions.
      set(qmm_bf16_sources src/cpu/x86/gemv_avx512bf16.c src/cpu/x86/gemm_avx512bf16.c)
      list(APPEND QMM_SOURCES ${qmm_bf16_sources})
      set_source_files_properties(${qmm_bf16_sources} PROPERTIES COMPILE_OPTIONS "${qmm_avx512_flags};-mavx512bf16")
      list(APPEND QMM_CPU_DEFINITIONS QMM_CPU_AVX512BF16)
      if(QMM_CC_AVX512VBMI)
        # FP8 decoding with byte permutes, for processors with both BF16 and VBMI.
        set_source_files_properties(src/cpu/x86/kernels_avx512vbmi.c PROPERTIES
                                    COMPILE_OPTIONS "${qmm_avx512_flags};-mavx512bf16;-mavx512vbmi")
        list(APPEND QMM_SOURCES src/cpu/x86/kernels_avx512vbmi.c)
        list(APPEND QMM_CPU_DEFINITIONS QMM_CPU_AVX512VBMI)
      endif()
    endif()
  endif()
endif()
