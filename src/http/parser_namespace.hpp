// SPDX-License-Identifier: Apache-2.0
#pragma once
// The inline namespace that llmux's HTTP/1.1 parser (message_parser.hpp, parser_scan.hpp,
// parser_field_name.cpp) lives in: the scalar build (LLMUX_NO_SIMD) gets its own symbols,
// parser_scalar, so that a test can link it beside the SIMD build's, parser_simd.
#if defined(LLMUX_NO_SIMD)
#define LLMUX_PARSER_NAMESPACE parser_scalar
#else
#define LLMUX_PARSER_NAMESPACE parser_simd
#endif
