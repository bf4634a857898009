#include "app/cli/comm_kernel_report.h"

#include <map>

#include "profiler/common/comm_kernels.h"
#include "profiler/common/nccl_names.h"
#include "storage/profile_reader.h"
#include "storage/sqlite_handle.h"

namespace ss::cli {

std::vector<CommKernelGroup> comm_kernel_groups(const std::string& path) {
  sql::Db db = open_profile_readonly(path);
  std::vector<CommKernelRule> rules = comm_kernel_rules();
  {
    sql::Stmt m(db.get(), "SELECT value FROM meta WHERE key = 'comm_kernel_rules'");
    if (m.step()) rules = parse_comm_kernel_rules(m.col_text(0));
  }
  std::map<std::pair<std::string, std::string>, CommKernelGroup> groups;
  sql::Stmt s(db.get(),
              "SELECT n.value, count(*), sum(k.duration_ns) FROM kernels k JOIN strings n ON n.id = k.name_id"
              " WHERE k.category = " + std::to_string(int(KernelCategory::Collective)) + " GROUP BY k.name_id");
  while (s.step()) {
    const std::string name = s.col_text(0);
    std::string family = "(unmatched)", rule;
    const NcclKernelInfo nccl = classify_nccl_kernel(name);
    if (nccl.is_comm && nccl.family == "nccl") {
      family = nccl.family;
      rule = nccl.rule;
    } else if (const CommKernelRule* r = match_comm_kernel(name, rules)) {
      family = r->family;
      rule = r->contains;
    } else if (!nccl.rule.empty()) {  // a collective kernel of a rule no longer stored
      family = nccl.family;
      rule = nccl.rule;
    } else if (name.rfind("gloo:", 0) == 0) {  // a CPU rank's collectives: gloo's worker-thread operators
      family = "gloo";
      rule = "gloo:";
    }
    auto& g = groups[{family, rule}];
    g.family = family;
    g.rule = rule;
    g.kernels += s.col_int(1);
    g.total_ns += s.col_int(2);
  }
  std::vector<CommKernelGroup> out;
  for (auto& [key, g] : groups) out.push_back(std::move(g));
  return out;
}

}  // namespace ss::cli
