# SPDX-License-Identifier: Apache-2.0
# Cross build for arm64 (aarch64) Linux with the distribution's cross compiler
# (g++-aarch64-linux-gnu) against an arm64 sysroot holding the libraries' -dev packages
# (scripts/platforms makes one from Debian 13). The tests run under qemu-user.
#   cmake -S . -B build-arm64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
#         -DLLMUX_SYSROOT=/path/to/sysroot
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

if(NOT LLMUX_SYSROOT AND DEFINED ENV{LLMUX_SYSROOT})
  set(LLMUX_SYSROOT "$ENV{LLMUX_SYSROOT}")
endif()
if(NOT LLMUX_SYSROOT)
  message(FATAL_ERROR "cmake/aarch64-linux-gnu.cmake: set LLMUX_SYSROOT to an arm64 sysroot")
endif()
# The toolchain file is read again by try_compile: hand the sysroot on.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES LLMUX_SYSROOT)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_SYSROOT "${LLMUX_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH "${LLMUX_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# pkg-config (xxhash, toml++) reads the sysroot's .pc files and prefixes their paths with it.
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${LLMUX_SYSROOT}")
set(ENV{PKG_CONFIG_LIBDIR}
    "${LLMUX_SYSROOT}/usr/lib/aarch64-linux-gnu/pkgconfig:${LLMUX_SYSROOT}/usr/share/pkgconfig")

# Test executables (and gtest_discover_tests) run through qemu-user with the sysroot's loader and
# libraries.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L "${LLMUX_SYSROOT}")
