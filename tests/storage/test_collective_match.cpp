// storage/collective_match.h: which collectives at one (group, sequence number) on two ranks are
// one operation. gloo numbers a pipeline group's sends and receives with its collectives in each
// rank's own order; these are the pairings found on torchtitan's dp 2 x pp 2 recording.
#include <catch2/catch.hpp>

#include "storage/collective_match.h"

using ss::CollectiveType;
using ss::same_operation;

TEST_CASE("one operation: the same type and, where every rank holds one size, the same bytes", "[storage]") {
  CHECK(same_operation(CollectiveType::AllGather, 4096, CollectiveType::AllGather, 4096));
  CHECK(same_operation(CollectiveType::AllReduce, 8, CollectiveType::AllReduce, 0));  // a size unknown
  CHECK_FALSE(same_operation(CollectiveType::AllReduce, 8, CollectiveType::AllReduce, 4));
  CHECK_FALSE(same_operation(CollectiveType::ReduceScatter, 1024, CollectiveType::AllGather, 1024));
  // All-to-all splits may differ by rank (an MoE's uneven routing): its bytes do not decide.
  CHECK(same_operation(CollectiveType::AllToAll, 100, CollectiveType::AllToAll, 300));
  CHECK(same_operation(CollectiveType::SendRecv, 100, CollectiveType::SendRecv, 300));
}

TEST_CASE("point to point: a send with a receive of its size, nothing else", "[storage]") {
  CHECK(ss::is_point_to_point(CollectiveType::Send));
  CHECK(ss::is_point_to_point(CollectiveType::Recv));
  CHECK_FALSE(ss::is_point_to_point(CollectiveType::SendRecv));  // NCCL's grouped kernel: an all-to-all's
  CHECK(same_operation(CollectiveType::Send, 131072, CollectiveType::Recv, 131072));
  CHECK(same_operation(CollectiveType::Recv, 131072, CollectiveType::Send, 131072));
  CHECK_FALSE(same_operation(CollectiveType::Recv, 8, CollectiveType::Recv, 8));    // two receives
  CHECK_FALSE(same_operation(CollectiveType::Send, 172, CollectiveType::Recv, 8));  // not the send it receives
  CHECK_FALSE(same_operation(CollectiveType::Send, 8, CollectiveType::AllReduce, 8));
  CHECK_FALSE(same_operation(CollectiveType::AllReduce, 8, CollectiveType::Recv, 8));
}
