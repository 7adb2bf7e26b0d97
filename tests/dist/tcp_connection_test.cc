// One connection of dist_grpc's TCP data path over a socket pair: frames into the
// receives of their tags, sizes that differ, dropped frames, a peer gone. Apart from the
// gRPC tests so that the TSan pass runs it: it uses no gRPC.
#include "tcp_connection.h"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <memory>

#include "transfer_util.h"

namespace rill::dist {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Two connected TcpConnections over a socket pair, a and b, each naming the other as its peer.
struct Pair {
  explicit Pair(milliseconds unclaimed_after = seconds(30)) {
    int fds[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    a = std::make_unique<TcpConnection>(fds[0], "peer b", unclaimed_after);
    b = std::make_unique<TcpConnection>(fds[1], "peer a", unclaimed_after);
  }
  std::unique_ptr<TcpConnection> a, b;
};

TEST(DistTcpConnection, FramesGoStraightIntoTheReceiveOfTheirTagWhicheverIsPostedFirst) {
  Pair p;
  std::vector<float> x = Iota(1 << 18, 0), y = Iota(1 << 10, 7), into_x(x.size()), into_y(y.size());
  Outcome sent_x, sent_y, got_x, got_y;
  p.a->Send(1, x.data(), x.size() * 4, sent_x.Done());
  p.a->Send(2, y.data(), y.size() * 4, sent_y.Done());
  // Frame 1 comes first and waits for its Receive, which is posted after frame 2's.
  p.b->Receive(2, into_y.data(), y.size() * 4, got_y.Done());
  p.b->Receive(1, into_x.data(), x.size() * 4, got_x.Done());
  EXPECT_EQ(got_x.Get(), "");
  EXPECT_EQ(got_y.Get(), "");
  EXPECT_EQ(sent_x.Get(), "");
  EXPECT_EQ(sent_y.Get(), "");
  EXPECT_EQ(into_x, x);
  EXPECT_EQ(into_y, y);
}

TEST(DistTcpConnection, AFrameOfAnotherSizeFailsItsReceiveAndTheConnectionGoesOn) {
  Pair p;
  std::vector<float> eight = Iota(8, 1), two = Iota(2, 5), into(4, -1), into_two(2);
  Outcome sent, got, sent_two, got_two;
  p.a->Send(1, eight.data(), 32, sent.Done());
  p.b->Receive(1, into.data(), 16, got.Done());
  EXPECT_EQ(got.Get(), "peer a sent 32 bytes for transfer 1, 16 were expected");
  EXPECT_EQ(into, std::vector<float>(4, -1));  // nothing written
  p.a->Send(2, two.data(), 8, sent_two.Done());
  p.b->Receive(2, into_two.data(), 8, got_two.Done());
  EXPECT_EQ(got_two.Get(), "");
  EXPECT_EQ(into_two, two);
  // The sender's memory must outlive its `done`: the writer may still be inside sendmsg
  // when the receiver already holds every byte.
  EXPECT_EQ(sent.Get(), "");
  EXPECT_EQ(sent_two.Get(), "");
}

TEST(DistTcpConnection, DiscardedAndUnclaimedFramesAreDroppedAndTheNextArrives) {
  Pair p(milliseconds(200));
  std::vector<float> big = Iota(1 << 16, 0), small = {3, 4}, into(2);
  Outcome s1, s2, s3, got;
  p.b->Discard(2);
  p.a->Send(1, big.data(), big.size() * 4, s1.Done());  // nobody ever receives tag 1
  p.a->Send(2, big.data(), big.size() * 4, s2.Done());
  p.a->Send(3, small.data(), 8, s3.Done());
  p.b->Receive(3, into.data(), 8, got.Done());
  EXPECT_EQ(got.Get(), "");
  EXPECT_EQ(into, small);
  for (Outcome* o : {&s1, &s2, &s3}) EXPECT_EQ(o->Get(), "");
}

TEST(DistTcpConnection, APeerGoneFailsWhatIsPendingNamingItAndLaterTransfersFailToo) {
  Pair p;
  std::vector<float> into(4);
  Outcome pending, later_send, later_receive;
  p.b->Receive(1, into.data(), 16, pending.Done());
  p.a.reset();
  const std::string error = pending.Get();
  EXPECT_NE(error.find("the data connection with peer a broke"), std::string::npos) << error;
  EXPECT_FALSE(p.b->open());
  p.b->Send(2, into.data(), 16, later_send.Done());
  p.b->Receive(3, into.data(), 16, later_receive.Done());
  EXPECT_EQ(later_send.Get(), error);
  EXPECT_EQ(later_receive.Get(), error);
}

}  // namespace
}  // namespace rill::dist
