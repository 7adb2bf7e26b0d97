#include "wire.h"

#include <algorithm>
#include <cstring>

#include "rill/checked_size.hpp"
#include "rill/sdk.hpp"

namespace rill::dist {

namespace {

// protobuf's wire types, and a field's tag (field number << 3 | wire type).
constexpr uint32_t kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;
constexpr uint32_t Tag(uint32_t field, uint32_t wire_type) { return field << 3 | wire_type; }

// VariableMessage's fields.
constexpr uint8_t kHeaderTag = Tag(1, kLengthDelimited);
constexpr uint8_t kDataTag = Tag(2, kLengthDelimited);

void PutVarint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

uint64_t ReadVarint(ReceivedBytes& in) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (in.size() == 0) throw WireError("message ends inside a length");
    const uint8_t b = in.Byte();
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return v;
  }
  throw WireError("malformed length (varint longer than 10 bytes)");
}

// Writes a message field by field into gRPC slices: the framing gathers in a string, cut
// into a slice of its own before each embedded message, whose slices are kept as they are
// (a variable's slice over tensor memory stays one).
class SliceWriter {
 public:
  void Varint(uint32_t field, uint64_t value) {
    PutVarint(framing_, Tag(field, kVarint));
    PutVarint(framing_, value);
  }
  void Embedded(uint32_t field, const grpc::ByteBuffer& message) {
    PutVarint(framing_, Tag(field, kLengthDelimited));
    PutVarint(framing_, message.Length());
    std::vector<grpc::Slice> pieces;
    if (message.Length() == 0) return;
    if (!message.Dump(&pieces).ok()) throw WireError("unreadable message buffer");
    Cut();
    for (auto& piece : pieces) slices_.push_back(std::move(piece));
  }
  grpc::ByteBuffer Finish() {
    Cut();
    return grpc::ByteBuffer(slices_.data(), slices_.size());
  }

 private:
  void Cut() {
    if (framing_.empty()) return;
    slices_.emplace_back(framing_);
    framing_.clear();
  }
  std::string framing_;
  std::vector<grpc::Slice> slices_;
};

// Reads a message's fields in order; the bytes of an embedded message stay in the
// received pieces.
class FieldReader {
 public:
  explicit FieldReader(ReceivedBytes in) : in_(std::move(in)) {}
  // The next field's number and wire type; false at the message's end.
  bool Next(uint32_t* field, uint32_t* wire_type) {
    if (in_.size() == 0) return false;
    const uint64_t tag = ReadVarint(in_);
    *field = static_cast<uint32_t>(tag >> 3);
    *wire_type = static_cast<uint32_t>(tag & 7);
    if (*field == 0) throw WireError("malformed message (field number 0)");
    return true;
  }
  uint64_t Varint() { return ReadVarint(in_); }
  ReceivedBytes Embedded() {
    const uint64_t n = ReadVarint(in_);
    if (n > in_.size()) throw WireError("a field's length exceeds the message");
    return in_.Take(n);
  }
  void Skip(uint32_t wire_type) {
    switch (wire_type) {
      case kVarint: ReadVarint(in_); return;
      case kFixed64: in_.Take(8); return;
      case kLengthDelimited: Embedded(); return;
      case kFixed32: in_.Take(4); return;
      default: throw WireError("malformed message (wire type " + std::to_string(wire_type) + ")");
    }
  }

 private:
  ReceivedBytes in_;
};

template <class Message> Message ParseEmbedded(ReceivedBytes bytes, const char* what) {
  std::string flat(bytes.size(), '\0');
  bytes.Read(flat.data(), flat.size());
  Message m;
  if (!m.ParseFromString(flat)) throw WireError(std::string("malformed ") + what);
  return m;
}

}  // namespace

ReceivedBytes::ReceivedBytes(const grpc::ByteBuffer& buffer) {
  if (buffer.Length() == 0) return;  // an empty message may come as no buffer at all
  if (!buffer.Dump(&slices_).ok()) throw WireError("unreadable message buffer");
  for (const auto& s : slices_) size_ += s.size();
}

ReceivedBytes ReceivedBytes::Borrowed(const void* data, size_t n) {
  ReceivedBytes bytes;
  if (n > 0) bytes.slices_.emplace_back(data, n, grpc::Slice::STATIC_SLICE);
  bytes.size_ = n;
  return bytes;
}

uint8_t ReceivedBytes::Byte() {
  uint8_t b;
  Read(&b, 1);
  return b;
}

void ReceivedBytes::Read(void* dst, size_t n) {
  if (n > size_) throw WireError("message ends early");
  auto* out = static_cast<uint8_t*>(dst);
  size_ -= n;
  while (n > 0) {
    const grpc::Slice& s = slices_[index_];
    const size_t take = std::min(n, s.size() - offset_);
    std::memcpy(out, s.begin() + offset_, take);
    out += take;
    n -= take;
    offset_ += take;
    if (offset_ == s.size()) {
      ++index_;
      offset_ = 0;
    }
  }
}

ReceivedBytes ReceivedBytes::Take(size_t n) {
  if (n > size_) throw WireError("message ends early");
  ReceivedBytes part;
  part.size_ = n;
  size_ -= n;
  while (n > 0) {
    const grpc::Slice& s = slices_[index_];
    const size_t take = std::min(n, s.size() - offset_);
    part.slices_.push_back(s.sub(offset_, offset_ + take));
    n -= take;
    offset_ += take;
    if (offset_ == s.size()) {
      ++index_;
      offset_ = 0;
    }
  }
  return part;
}

void SliceLease::Acquire() {
  std::lock_guard<std::mutex> lock(mu_);
  ++outstanding_;
}

grpc::Slice SliceLease::Over(const void* data, size_t n) {
  Acquire();
  // gRPC never writes through a slice it sends; the const_cast only meets its signature.
  return grpc::Slice(const_cast<void*>(data), n, &SliceLease::Release, this);
}

void SliceLease::Release(void* lease) {
  auto* self = static_cast<SliceLease*>(lease);
  std::lock_guard<std::mutex> lock(self->mu_);
  if (--self->outstanding_ == 0) self->released_.notify_all();
}

void SliceLease::WaitReleased() {
  std::unique_lock<std::mutex> lock(mu_);
  released_.wait(lock, [&] { return outstanding_ == 0; });
}

void SliceLease::Abandon() {
  std::lock_guard<std::mutex> lock(mu_);
  outstanding_ = 0;
}

bool SliceLease::WaitReleased(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return released_.wait_for(lock, timeout, [&] { return outstanding_ == 0; });
}

int64_t CheckedNumel(const std::vector<int64_t>& dims) {
  const ShapeSize size = SizeOfShape(dims.data(), dims.size(), 1);
  if (!size.ok()) throw WireError(size.error);
  return size.numel;
}

grpc::ByteBuffer EncodeVariable(const std::string& name, int32_t trainer_id, int64_t iteration,
                                const TensorBytes& tensor, SliceLease& lease, const v1::OutOfBand* route) {
  v1::VariableHeader header;
  header.set_name(name);
  header.set_trainer_id(trainer_id);
  header.set_iteration(iteration);
  auto* meta = header.mutable_tensor();
  meta->set_dtype(tensor.dtype);
  for (int64_t d : tensor.dims) meta->add_dims(d);
  for (const auto& level : tensor.lod) {
    auto* l = meta->add_lod();
    for (uint64_t o : level) l->add_offsets(o);
  }
  if (tensor.height >= 0) {
    auto* sr = header.mutable_selected_rows();
    sr->set_height(tensor.height);
    for (int64_t r : tensor.rows) sr->add_rows(r);
  }
  if (route) *header.mutable_out_of_band() = *route;
  std::string framing;
  framing.push_back(static_cast<char>(kHeaderTag));
  PutVarint(framing, header.ByteSizeLong());
  header.AppendToString(&framing);
  if (route || tensor.bytes == 0) {
    grpc::Slice slice(framing);
    return grpc::ByteBuffer(&slice, 1);
  }
  framing.push_back(static_cast<char>(kDataTag));
  PutVarint(framing, tensor.bytes);
  grpc::Slice slices[2] = {grpc::Slice(framing), lease.Over(tensor.data, tensor.bytes)};
  return grpc::ByteBuffer(slices, 2);
}

size_t TensorByteSize(const v1::VariableHeader& header) {
  const auto& meta = header.tensor();
  const size_t elem = DataTypeSize(meta.dtype());
  if (elem == 0) throw WireError("unknown dtype " + std::to_string(meta.dtype()) + " for '" + header.name() + "'");
  const ShapeSize size = SizeOfShape(meta.dims().data(), static_cast<size_t>(meta.dims_size()), elem);
  if (!size.ok()) throw WireError("'" + header.name() + "': " + size.error);
  return size.bytes;
}

v1::VariableHeader ParseVariable(const grpc::ByteBuffer& buffer, ReceivedBytes* data) {
  return ParseVariable(ReceivedBytes(buffer), data);
}

v1::VariableHeader ParseVariable(ReceivedBytes in, ReceivedBytes* data) {
  if (in.size() == 0 || in.Byte() != kHeaderTag) {
    throw WireError("a variable message must start with its header (field 1)");
  }
  const uint64_t header_size = ReadVarint(in);
  if (header_size > in.size()) throw WireError("header length exceeds the message");
  std::string header_bytes(header_size, '\0');
  in.Read(header_bytes.data(), header_size);
  v1::VariableHeader header;
  if (!header.ParseFromString(header_bytes)) throw WireError("malformed variable header");

  uint64_t data_size = 0;
  if (in.size() > 0) {
    if (in.Byte() != kDataTag) throw WireError("expected the data (field 2) after the header");
    data_size = ReadVarint(in);
  }
  if (data_size != in.size()) {
    throw WireError("data length " + std::to_string(data_size) + " does not match the " + std::to_string(in.size()) +
                    " bytes that follow");
  }
  const size_t bytes = TensorByteSize(header);
  const std::vector<int64_t> dims(header.tensor().dims().begin(), header.tensor().dims().end());
  if (header.has_out_of_band()) {
    if (data_size != 0) throw WireError("'" + header.name() + "' carries data and an out-of-band route");
  } else if (bytes != data_size) {
    throw WireError("'" + header.name() + "' declares " + std::to_string(CheckedNumel(dims)) + " elements of " +
                    std::to_string(DataTypeSize(header.tensor().dtype())) + " bytes but carries " +
                    std::to_string(data_size) + " bytes");
  }
  if (header.has_selected_rows()) {
    const auto& sr = header.selected_rows();
    if (dims.empty() || dims[0] != sr.rows_size()) {
      throw WireError("'" + header.name() + "' is SelectedRows with " + std::to_string(sr.rows_size()) +
                      " rows but its value has " +
                      (dims.empty() ? std::string("no dims") : std::to_string(dims[0]) + " rows"));
    }
    for (int64_t r : sr.rows()) {
      if (r < 0 || r >= sr.height()) {
        throw WireError("'" + header.name() + "' row " + std::to_string(r) + " is outside [0, " +
                        std::to_string(sr.height()) + ")");
      }
    }
  }
  *data = std::move(in);
  return header;
}

v1::VariableHeader DecodeVariable(const grpc::ByteBuffer& buffer,
                                  const std::function<void*(const v1::VariableHeader&)>& destination) {
  return DecodeVariable(ReceivedBytes(buffer), destination);
}

v1::VariableHeader DecodeVariable(ReceivedBytes message,
                                  const std::function<void*(const v1::VariableHeader&)>& destination) {
  ReceivedBytes data;
  v1::VariableHeader header = ParseVariable(std::move(message), &data);
  void* dst = destination(header);
  if (data.size() > 0) data.Read(dst, data.size());
  return header;
}

// StepRequest's and StepReply's fields (parameter_server.proto).
constexpr uint32_t kStepTrainer = 1, kStepIteration = 2, kStepGradient = 3, kStepParameter = 4;
constexpr uint32_t kReplyParameter = 1;

grpc::ByteBuffer EncodeStep(int32_t trainer_id, int64_t iteration, const std::vector<grpc::ByteBuffer>& gradients,
                            const std::vector<v1::GetRequest>& parameters) {
  SliceWriter out;
  // protobuf writes a negative int32 as its 64-bit two's complement.
  out.Varint(kStepTrainer, static_cast<uint64_t>(static_cast<int64_t>(trainer_id)));
  out.Varint(kStepIteration, static_cast<uint64_t>(iteration));
  for (const auto& g : gradients) out.Embedded(kStepGradient, g);
  for (const auto& p : parameters) out.Embedded(kStepParameter, EncodeMessage(p));
  return out.Finish();
}

ParsedStep ParseStep(const grpc::ByteBuffer& buffer) {
  ParsedStep step;
  FieldReader in{ReceivedBytes(buffer)};
  uint32_t field = 0, wire_type = 0;
  while (in.Next(&field, &wire_type)) {
    const bool known = field >= kStepTrainer && field <= kStepParameter;
    if (!known) {
      in.Skip(wire_type);
      continue;
    }
    const uint32_t expected = field <= kStepIteration ? kVarint : kLengthDelimited;
    if (wire_type != expected) throw WireError("malformed step (field " + std::to_string(field) + ")");
    if (field == kStepTrainer) {
      step.trainer_id = static_cast<int32_t>(in.Varint());
    } else if (field == kStepIteration) {
      step.iteration = static_cast<int64_t>(in.Varint());
    } else if (field == kStepGradient) {
      ReceivedBytes data;
      v1::VariableHeader header = ParseVariable(in.Embedded(), &data);
      step.gradients.emplace_back(std::move(header), std::move(data));
    } else {
      step.parameters.push_back(ParseEmbedded<v1::GetRequest>(in.Embedded(), "parameter request"));
    }
  }
  return step;
}

grpc::ByteBuffer EncodeStepReply(const std::vector<grpc::ByteBuffer>& parameters) {
  SliceWriter out;
  for (const auto& p : parameters) out.Embedded(kReplyParameter, p);
  return out.Finish();
}

std::vector<ReceivedBytes> ParseStepReply(const grpc::ByteBuffer& buffer) {
  std::vector<ReceivedBytes> parameters;
  FieldReader in{ReceivedBytes(buffer)};
  uint32_t field = 0, wire_type = 0;
  while (in.Next(&field, &wire_type)) {
    if (field != kReplyParameter) {
      in.Skip(wire_type);
      continue;
    }
    if (wire_type != kLengthDelimited) throw WireError("malformed step reply");
    parameters.push_back(in.Embedded());
  }
  return parameters;
}

std::string Flatten(const grpc::ByteBuffer& buffer) {
  grpc::Slice joined;
  if (buffer.Length() > 0 && !buffer.DumpToSingleSlice(&joined).ok()) throw WireError("unreadable message buffer");
  return std::string(reinterpret_cast<const char*>(joined.begin()), joined.size());
}

grpc::ByteBuffer EncodeMessage(const google::protobuf::MessageLite& message) {
  grpc::Slice slice(message.SerializeAsString());
  return grpc::ByteBuffer(&slice, 1);
}

void DecodeMessage(const grpc::ByteBuffer& buffer, google::protobuf::MessageLite* message) {
  message->Clear();
  if (buffer.Length() == 0) return;  // every field at its default
  grpc::Slice joined;
  if (!buffer.DumpToSingleSlice(&joined).ok() ||
      !message->ParseFromArray(joined.begin(), static_cast<int>(joined.size()))) {
    throw WireError("malformed " + message->GetTypeName());
  }
}

}  // namespace rill::dist
