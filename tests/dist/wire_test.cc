// The dist_grpc wire format: zero-copy encoding, decoding into the destination, and the
// checks that run before anything is allocated.
#include "wire.h"

#include <gtest/gtest.h>

#include <numeric>

#include "rill/abi.h"

namespace rill::dist {
namespace {

std::string Joined(const grpc::ByteBuffer& b) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(b.Dump(&slices).ok());
  std::string s;
  for (const auto& x : slices) s.append(reinterpret_cast<const char*>(x.begin()), x.size());
  return s;
}

// The same bytes cut into slices of `chunk` bytes, as they may arrive from the network.
grpc::ByteBuffer Chunked(const std::string& bytes, size_t chunk) {
  std::vector<grpc::Slice> slices;
  for (size_t at = 0; at < bytes.size(); at += chunk)
    slices.emplace_back(bytes.data() + at, std::min(chunk, bytes.size() - at));
  return grpc::ByteBuffer(slices.data(), slices.size());
}

// A hand-made VariableMessage: any header, any data.
std::string Message(const v1::VariableHeader& header, const std::string& data) {
  v1::VariableMessage m;
  *m.mutable_header() = header;
  m.set_data(data);
  return m.SerializeAsString();
}

v1::VariableHeader Header(const std::string& name, int32_t dtype, std::vector<int64_t> dims) {
  v1::VariableHeader h;
  h.set_name(name);
  h.mutable_tensor()->set_dtype(dtype);
  for (int64_t d : dims) h.mutable_tensor()->add_dims(d);
  return h;
}

TEST(DistWire, EncodesOverTheTensorsMemoryAndDecodesAcrossAnySlicing) {
  std::vector<float> data(1000);
  std::iota(data.begin(), data.end(), 0.5f);
  TensorBytes t{RILL_FP32, {10, 100}, {{0, 4, 10}}, data.data(), data.size() * sizeof(float)};
  SliceLease lease;
  std::string bytes;
  {
    grpc::ByteBuffer buffer = EncodeVariable("w@GRAD", 1, 7, t, lease);
    std::vector<grpc::Slice> slices;
    ASSERT_TRUE(buffer.Dump(&slices).ok());
    ASSERT_EQ(slices.size(), 2u);
    EXPECT_EQ(static_cast<const void*>(slices[1].begin()), static_cast<const void*>(data.data()));  // no copy
    bytes = Joined(buffer);
  }
  lease.WaitReleased();  // the buffers are gone, so are their slices

  // Any protobuf reader sees a VariableMessage.
  v1::VariableMessage plain;
  ASSERT_TRUE(plain.ParseFromString(bytes));
  EXPECT_EQ(plain.header().name(), "w@GRAD");
  EXPECT_EQ(plain.header().iteration(), 7);
  EXPECT_EQ(plain.data().size(), 4000u);

  for (size_t chunk : {size_t{1}, size_t{7}, size_t{4096}, bytes.size()}) {
    std::vector<float> out(1000, -1);
    const v1::VariableHeader h = DecodeVariable(Chunked(bytes, chunk), [&](const v1::VariableHeader& h) {
      EXPECT_EQ(h.tensor().dims_size(), 2);
      return static_cast<void*>(out.data());
    });
    EXPECT_EQ(out, data) << "chunk " << chunk;
    EXPECT_EQ(h.trainer_id(), 1);
    ASSERT_EQ(h.tensor().lod_size(), 1);
    EXPECT_EQ(h.tensor().lod(0).offsets(2), 10u);
  }
}

TEST(DistWire, AStepKeepsItsGradientsOverTheTensorsMemoryAndIsProtobufsEncoding) {
  std::vector<float> w(300), b(3);
  std::iota(w.begin(), w.end(), 1.0f);
  std::iota(b.begin(), b.end(), -1.0f);
  SliceLease lease;
  std::string bytes;
  {
    v1::GetRequest pull;
    pull.set_name("w");
    pull.set_trainer_id(-1);  // a negative int32, as protobuf writes it
    pull.set_iteration(4);
    const grpc::ByteBuffer step =
        EncodeStep(-1, 4,
                   {EncodeVariable("w@GRAD", -1, 4, TensorBytes{RILL_FP32, {300}, {}, w.data(), 1200}, lease),
                    EncodeVariable("b@GRAD", -1, 4, TensorBytes{RILL_FP32, {3}, {}, b.data(), 12}, lease)},
                   {pull});
    std::vector<grpc::Slice> slices;
    ASSERT_TRUE(step.Dump(&slices).ok());
    bool over_w = false;
    for (const auto& slice : slices) over_w |= static_cast<const void*>(slice.begin()) == w.data();
    EXPECT_TRUE(over_w) << "w@GRAD's bytes were copied";
    bytes = Joined(step);
  }
  lease.WaitReleased();

  v1::StepRequest plain;  // what any protobuf reader sees
  ASSERT_TRUE(plain.ParseFromString(bytes));
  EXPECT_EQ(plain.trainer_id(), -1);
  EXPECT_EQ(plain.iteration(), 4);
  ASSERT_EQ(plain.gradients_size(), 2);
  EXPECT_EQ(plain.gradients(1).header().name(), "b@GRAD");
  EXPECT_EQ(plain.gradients(0).data().size(), 1200u);
  ASSERT_EQ(plain.parameters_size(), 1);
  EXPECT_EQ(plain.parameters(0).name(), "w");

  for (size_t chunk : {size_t{1}, size_t{5}, bytes.size()}) {
    ParsedStep step = ParseStep(Chunked(bytes, chunk));
    EXPECT_EQ(step.trainer_id, -1);
    EXPECT_EQ(step.iteration, 4);
    ASSERT_EQ(step.gradients.size(), 2u);
    std::vector<float> got(300);
    step.gradients[0].second.Read(got.data(), 1200);
    EXPECT_EQ(got, w) << "chunk " << chunk;
    EXPECT_EQ(step.gradients[1].first.name(), "b@GRAD");
    EXPECT_EQ(step.gradients[1].second.size(), 12u);
    ASSERT_EQ(step.parameters.size(), 1u);
    EXPECT_EQ(step.parameters[0].iteration(), 4);
  }
  // A field protobuf's reader would skip is skipped; a gradient that lies about its size
  // is refused as a variable message is.
  plain.mutable_gradients(0)->mutable_header()->mutable_tensor()->set_dims(0, 301);
  EXPECT_THROW(ParseStep(Chunked(plain.SerializeAsString(), 3)), WireError);
  const std::string unknown = std::string("\x78\x05", 2);  // field 15, varint 5
  EXPECT_EQ(ParseStep(Chunked(unknown + bytes, 2)).gradients.size(), 2u);
}

TEST(DistWire, AStepReplyCarriesTheParametersInOrder) {
  std::vector<float> w = {1, 2}, b = {3};
  SliceLease lease;
  const std::string bytes =
      Joined(EncodeStepReply({EncodeVariable("w", 0, 2, TensorBytes{RILL_FP32, {2}, {}, w.data(), 8}, lease),
                              EncodeVariable("b", 0, 2, TensorBytes{RILL_FP32, {1}, {}, b.data(), 4}, lease)}));
  v1::StepReply plain;
  ASSERT_TRUE(plain.ParseFromString(bytes));
  ASSERT_EQ(plain.parameters_size(), 2);
  std::vector<ReceivedBytes> got = ParseStepReply(Chunked(bytes, 3));
  ASSERT_EQ(got.size(), 2u);
  std::vector<float> out(2);
  EXPECT_EQ(DecodeVariable(std::move(got[0]), [&](const v1::VariableHeader&) { return static_cast<void*>(out.data()); })
                .name(),
            "w");
  EXPECT_EQ(out, w);
  EXPECT_TRUE(ParseStepReply(grpc::ByteBuffer()).empty());  // no parameters: no bytes at all
}

TEST(DistWire, SelectedRowsTravelWithRowsAndHeight) {
  std::vector<double> values = {1, 2, 3, 4, 5, 6};
  TensorBytes t{RILL_FP64, {3, 2}, {}, values.data(), values.size() * sizeof(double)};
  t.rows = {7, 0, 7};
  t.height = 9;
  SliceLease lease;
  const std::string bytes = Joined(EncodeVariable("emb@GRAD", 0, 1, t, lease));
  std::vector<double> out(6);
  const auto h =
      DecodeVariable(Chunked(bytes, 3), [&](const v1::VariableHeader&) { return static_cast<void*>(out.data()); });
  ASSERT_TRUE(h.has_selected_rows());
  EXPECT_EQ(h.selected_rows().height(), 9);
  EXPECT_EQ(std::vector<int64_t>(h.selected_rows().rows().begin(), h.selected_rows().rows().end()),
            (std::vector<int64_t>{7, 0, 7}));
  EXPECT_EQ(out, values);
}

TEST(DistWire, AnEmptyTensorHasNoDataSlice) {
  TensorBytes t{RILL_FP64, {0, 3}, {}, nullptr, 0};
  SliceLease lease;
  const std::string bytes = Joined(EncodeVariable("e", 0, 0, t, lease));
  bool asked = false;
  DecodeVariable(Chunked(bytes, 3), [&](const v1::VariableHeader&) {
    asked = true;
    return nullptr;
  });
  EXPECT_TRUE(asked);
}

void ExpectRejected(const std::string& bytes, const std::string& reason) {
  bool allocated = false;
  try {
    DecodeVariable(Chunked(bytes, 5), [&](const v1::VariableHeader&) {
      allocated = true;
      return nullptr;
    });
    ADD_FAILURE() << "accepted; expected: " << reason;
  } catch (const WireError& e) {
    EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << e.what();
  }
  EXPECT_FALSE(allocated) << "nothing may be allocated for a bad message";
}

TEST(DistWire, BadMessagesAreRejectedBeforeAnythingIsAllocated) {
  const std::string four_floats(16, '\1');
  ExpectRejected("", "must start with its header");
  ExpectRejected(std::string("\x12\x01x", 3), "must start with its header");
  ExpectRejected(Message(Header("w", RILL_FP32, {1LL << 40}), four_floats), "declares 1099511627776 elements");
  ExpectRejected(Message(Header("w", RILL_FP32, {4, 1LL << 62}), four_floats), "more elements than int64 can count");
  ExpectRejected(Message(Header("w", RILL_FP32, {1LL << 62}), four_floats), "more bytes than memory can address");
  ExpectRejected(Message(Header("w", RILL_FP32, {-4}), four_floats), "has a negative dimension");
  ExpectRejected(Message(Header("w", 99, {4}), four_floats), "unknown dtype 99");
  ExpectRejected(Message(Header("w", RILL_FP32, {5}), four_floats), "carries 16 bytes");
  const std::string good = Message(Header("w", RILL_FP32, {4}), four_floats);
  ExpectRejected(good.substr(0, good.size() - 1), "does not match");
  ExpectRejected(good + "junk", "does not match");
  ExpectRejected(std::string("\x0a\x7f", 2), "header length exceeds");
  v1::VariableHeader sparse = Header("g", RILL_FP32, {2, 2});
  sparse.mutable_selected_rows()->set_height(5);
  sparse.mutable_selected_rows()->add_rows(1);
  ExpectRejected(Message(sparse, four_floats), "SelectedRows with 1 rows but its value has 2 rows");
  sparse.mutable_selected_rows()->add_rows(5);
  ExpectRejected(Message(sparse, four_floats), "row 5 is outside [0, 5)");
  ExpectRejected(std::string("\x0a\x03\xff\xff\xff", 5), "malformed variable header");
}

}  // namespace
}  // namespace rill::dist
