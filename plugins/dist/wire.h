// wire.h — a variable on the wire (VariableMessage) without copying the tensor's bytes.
//
// Contract:
//  - EncodeVariable writes the message as two slices: a small one holding the protobuf
//    framing and the header, and one over the tensor's own memory. Every slice over that
//    memory is counted by a SliceLease; the memory must stay alive and unchanged until
//    the lease reports all of them released (gRPC may drop its reference after the call
//    returns).
//  - ParseVariable parses a received buffer: the header, then the data checked against
//    the header (dtype known, dims non-negative, byte count = numel × dtype size = bytes
//    present; for SelectedRows, one row index in [0, height) per value row), so a lying
//    or huge declared size costs nothing. The data is not copied: it stays in the
//    buffer's slices, which the returned ReceivedBytes keeps alive. DecodeVariable does
//    the same, then asks `destination` for memory and copies the data straight into it.
//    Bad input throws WireError with the reason.
//  - The bytes read and written are exactly protobuf's encoding of VariableMessage
//    (header = field 1, data = field 2), so any protobuf implementation interoperates.
//  - A step (StepRequest, StepReply) embeds variable messages the same way: encoding
//    keeps their slices over tensor memory, parsing leaves their bytes in the received
//    slices. Unknown fields are skipped, as protobuf does.
#ifndef RILL_DIST_PS_WIRE_H_
#define RILL_DIST_PS_WIRE_H_

#include <grpcpp/support/byte_buffer.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "parameter_server.pb.h"

namespace rill::dist {

class WireError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Counts slices handed to gRPC over memory the caller owns.
class SliceLease {
 public:
  SliceLease() = default;
  SliceLease(const SliceLease&) = delete;
  SliceLease& operator=(const SliceLease&) = delete;
  ~SliceLease() { WaitReleased(); }

  // A slice over [data, data + n) that gRPC may hold; released through this lease.
  grpc::Slice Over(const void* data, size_t n);
  // The same count for a reader that is not a slice (a DataPath send): Acquire, then
  // Release once it is done with the memory.
  void Acquire();
  void Release() { Release(this); }
  // Blocks until every slice made by Over (and every Acquire) has been released.
  void WaitReleased();
  // The same, giving up after `timeout`: false if some are still held.
  bool WaitReleased(std::chrono::milliseconds timeout);
  // Stops counting the holders that will never release (their owner is gone, and this
  // process is ending on an error), so the destructor does not wait for them.
  void Abandon();

 private:
  static void Release(void* lease);

  std::mutex mu_;
  std::condition_variable released_;
  int64_t outstanding_ = 0;
};

// A tensor as the sender sees it: the bytes are borrowed. With height >= 0 it is the
// value of SelectedRows: rows `rows` of a [height, ...] tensor.
struct TensorBytes {
  TensorBytes() = default;
  TensorBytes(int32_t dtype, std::vector<int64_t> dims, std::vector<std::vector<uint64_t>> lod, const void* data,
              size_t bytes)
      : dtype(dtype), dims(std::move(dims)), lod(std::move(lod)), data(data), bytes(bytes) {}

  int32_t dtype = -1;
  std::vector<int64_t> dims;
  std::vector<std::vector<uint64_t>> lod;
  const void* data = nullptr;
  size_t bytes = 0;
  std::vector<int64_t> rows;
  int64_t height = -1;
};

// Bytes left where they were received: in order, in one or more pieces (gRPC's slices),
// kept alive by this object. Reading consumes them from the front; a copy of the object
// reads the same bytes again (the pieces are reference-counted, not copied).
class ReceivedBytes {
 public:
  ReceivedBytes() = default;
  // Every byte of `buffer`.
  explicit ReceivedBytes(const grpc::ByteBuffer& buffer);
  // `n` bytes at `data`, owned by the caller, who keeps them alive and unchanged as long
  // as this object (or a copy) is read.
  static ReceivedBytes Borrowed(const void* data, size_t n);

  size_t size() const { return size_; }
  uint8_t Byte();
  // Copies the next `n` bytes to `dst`; WireError if fewer are left.
  void Read(void* dst, size_t n);
  // The next `n` bytes as their own ReceivedBytes, sharing the pieces (no copy); WireError
  // if fewer are left.
  ReceivedBytes Take(size_t n);

 private:
  std::vector<grpc::Slice> slices_;
  size_t index_ = 0, offset_ = 0;  // the next byte: slices_[index_][offset_]
  size_t size_ = 0;                // bytes not yet read
};

// With `route`, the message is the header alone (header.out_of_band = *route): the bytes
// go by a DataPath, and `lease` is not used.
grpc::ByteBuffer EncodeVariable(const std::string& name, int32_t trainer_id, int64_t iteration,
                                const TensorBytes& tensor, SliceLease& lease, const v1::OutOfBand* route = nullptr);

// Element count of `dims`, or WireError if a dim is negative or the product overflows.
int64_t CheckedNumel(const std::vector<int64_t>& dims);

// Parses `buffer` and checks it; *data receives the tensor's bytes (header.tensor's byte
// size, none with out_of_band), still in the buffer's slices. Returns the header.
v1::VariableHeader ParseVariable(const grpc::ByteBuffer& buffer, ReceivedBytes* data);
// The same, of a message's bytes already received (a step's embedded variable).
v1::VariableHeader ParseVariable(ReceivedBytes message, ReceivedBytes* data);

// ParseVariable, then destination(header), then the data copied into the memory it
// returns (header.tensor's byte size). Returns the header. A header with out_of_band
// comes without data: destination() is still called, and the caller receives the bytes
// (TensorByteSize(header)) by the DataPath.
v1::VariableHeader DecodeVariable(const grpc::ByteBuffer& buffer,
                                  const std::function<void*(const v1::VariableHeader&)>& destination);
v1::VariableHeader DecodeVariable(ReceivedBytes message,
                                  const std::function<void*(const v1::VariableHeader&)>& destination);

// A StepRequest: `gradients` are EncodeVariable's messages (their slices are kept),
// `parameters` the pulls.
grpc::ByteBuffer EncodeStep(int32_t trainer_id, int64_t iteration, const std::vector<grpc::ByteBuffer>& gradients,
                            const std::vector<v1::GetRequest>& parameters);
struct ParsedStep {
  int32_t trainer_id = 0;
  int64_t iteration = 0;
  std::vector<std::pair<v1::VariableHeader, ReceivedBytes>> gradients;  // ParseVariable's, each checked
  std::vector<v1::GetRequest> parameters;
};
ParsedStep ParseStep(const grpc::ByteBuffer& buffer);
// A StepReply of EncodeVariable's messages, and the variable messages of one received.
grpc::ByteBuffer EncodeStepReply(const std::vector<grpc::ByteBuffer>& parameters);
std::vector<ReceivedBytes> ParseStepReply(const grpc::ByteBuffer& buffer);

// numel × dtype size of the header's tensor, checked (WireError for an unknown dtype,
// negative dims or overflow).
size_t TensorByteSize(const v1::VariableHeader& header);

// The bytes of a (small) buffer, for a DataPath push.
std::string Flatten(const grpc::ByteBuffer& buffer);

// Small messages (requests, replies) in and out of gRPC buffers.
grpc::ByteBuffer EncodeMessage(const google::protobuf::MessageLite& message);
void DecodeMessage(const grpc::ByteBuffer& buffer, google::protobuf::MessageLite* message);

}  // namespace rill::dist

#endif  // RILL_DIST_PS_WIRE_H_
