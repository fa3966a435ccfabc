#pragma once
// How zoo talks to zoo-spm (data/spm_bridge/zoo_spm.cc), the helper process that runs the
// SentencePiece library. Why a separate process: Debian's libsentencepiece carries its own
// copy of protobuf-lite 3.14 while Debian's LibTorch links the system libprotobuf 3.21;
// linked into one program, SentencePiece's protobuf calls bind to 3.21, whose version check
// aborts the first SentencePiece call (and loading it with deep binding breaks libstdc++'s
// streams). zoo-spm links SentencePiece and nothing of LibTorch.
//
//   zoo-spm train KEY=VALUE...   SentencePieceTrainer::Train({KEY: VALUE, ...}); exit 0,
//                                or 1 with the error on stderr
//   zoo-spm serve           answers requests on stdin/stdout until end of input
//
// A request: op (1 byte), payload size (uint64, little-endian), payload. An answer: status
// (1 byte: 0 ok, 1 error), size, payload (on error: the message).
//   'L' a serialized model            -> int32 piece count, int32 end-of-text id
//   'E' UTF-8 text                    -> int32 ids
//   'D' int32 ids                     -> UTF-8 text
//   'P' (nothing)                     -> every piece in id order, each followed by a 0 byte
//   'N' (nothing)                     -> int32 ids of the pieces an encoding can produce (not
//                                        control, unknown, unused or byte pieces)
//   'S' int32 nbest_size, float32 alpha, uint32 seed, then per text: int32 length, UTF-8 bytes
//                                     -> per text: int32 count, int32 ids (SampleEncode; the same
//                                        seed gives the same ids)
#include <cstdint>

namespace zoo::data::spm_protocol {
constexpr char kLoad = 'L', kEncode = 'E', kDecode = 'D', kPieces = 'P', kSampleable = 'N', kSample = 'S';
constexpr char kOk = 0, kError = 1;
}  // namespace zoo::data::spm_protocol
