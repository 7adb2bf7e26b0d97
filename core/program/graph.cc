#include "core/program/graph.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "core/program/program.h"
#include "core/runtime/dtype.h"

namespace rill::core {
namespace {

// Attributes that say nothing about what an op computes (Paddle's bookkeeping, kernel
// hints), left off op labels.
const std::set<std::string> kQuietAttrs = {"op_role",       "op_role_var",      "op_namescope", "op_callstack",
                                           "op_device",     "with_quant_attr",  "use_mkldnn",   "use_cudnn",
                                           "use_quantizer", "mkldnn_data_type", "cases",        "endpoints",
                                           "epmap"};
constexpr size_t kLabelAttrs = 3;                   // at most this many attributes on an op's box
constexpr size_t kShortValue = 24;                  // longer values are left off
constexpr size_t kNotedProblems = 10;               // problems listed in the note, the rest counted
constexpr char kSizeComment[] = "// rill graph: ";  // graph.h: the first line's size

// A DOT double-quoted string's contents.
std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string Number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

// "k=v" for an attribute short enough to label a box with; empty otherwise.
std::string ShortAttr(const proto::OpDesc::Attr& a) {
  if (kQuietAttrs.count(a.name())) return "";
  std::string v;
  const auto list = [&](const auto& values) {
    if (values.size() > 4) return std::string();
    std::string s = "[";
    for (int i = 0; i < values.size(); ++i) s += (i ? "," : "") + Number(static_cast<double>(values.Get(i)));
    return s + "]";
  };
  const bool dtype =
      a.name() == "dtype" || a.name() == "data_type" || a.name() == "in_dtype" || a.name() == "out_dtype";
  switch (a.type()) {
    case proto::INT:
      v = !dtype ? std::to_string(a.i()) : IsTensorDataType(a.i()) ? DataTypeName(a.i()) : VarTypeName(a.i());
      break;
    case proto::LONG: v = std::to_string(a.l()); break;
    case proto::FLOAT: v = Number(a.f()); break;
    case proto::FLOAT64: v = Number(a.float64()); break;
    case proto::BOOLEAN: v = a.b() ? "true" : "false"; break;
    case proto::STRING: v = a.s().empty() ? "\"\"" : a.s(); break;
    case proto::INTS: v = list(a.ints()); break;
    case proto::LONGS: v = list(a.longs()); break;
    case proto::FLOATS: v = list(a.floats()); break;
    default: return "";
  }
  if (v.empty() || v.size() > kShortValue) return "";
  return a.name() + "=" + v;
}

std::string DimsText(const proto::VarType::TensorDesc& t) {
  std::string s = DataTypeName(t.data_type()) + " [";
  for (int i = 0; i < t.dims_size(); ++i) s += (i ? ", " : "") + std::to_string(t.dims(i));
  return s + "]";
}

// A select case as its `cases` attribute writes it ("idx,type,channel,value").
struct SelectCase {
  int kind = -1;  // 0 default, 1 send, 2 receive
  std::string channel, value;
};

SelectCase ParseCase(const std::string& text) {
  SelectCase c;
  std::vector<std::string> parts;
  std::string cur;
  for (char ch : text) {
    if (ch == ',') {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += ch;
    }
  }
  parts.push_back(cur);
  if (parts.size() == 4) {
    c.kind = parts[1] == "0" ? 0 : parts[1] == "1" ? 1 : parts[1] == "2" ? 2 : -1;
    c.channel = parts[2];
    c.value = parts[3];
  }
  return c;
}

std::string CaseLabel(size_t index, const SelectCase& c) {
  const std::string head = "case " + std::to_string(index) + ": ";
  if (c.kind == 0) return head + "default";
  if (c.kind == 1) return head + "send " + c.value + " on " + c.channel;
  if (c.kind == 2) return head + "receive " + c.value + " from " + c.channel;
  return head + "?";
}

class Drawer {
 public:
  Drawer(const proto::ProgramDesc& program, const GraphOptions& options)
      : p_(program), options_(options), blocks_(program.blocks_size()) {
    block_vars_.resize(static_cast<size_t>(blocks_));
    block_ops_.resize(static_cast<size_t>(blocks_));
    for (int b = 0; b < blocks_; ++b) {
      drawn_.push_back(options.block < 0 || options.block == b);
    }
    if (options.block >= blocks_) {
      notes_.push_back("block " + std::to_string(options.block) + " does not exist (the program has " +
                       std::to_string(blocks_) + ")");
    }
    static const std::regex kWhere(R"(^block (\d+), op (\d+))");
    for (const auto& problem : options.problems) {
      std::smatch m;
      if (std::regex_search(problem, m, kWhere)) {
        std::string& text = problems_[{std::stoi(m[1]), std::stoi(m[2])}];
        text += (text.empty() ? "" : "\n") + problem;
      } else {
        notes_.push_back(problem);
      }
    }
  }

  std::string Draw() {
    FindOwners();
    FindChannels();
    for (int b = 0; b < blocks_; ++b) {
      if (drawn_[static_cast<size_t>(b)]) DrawOps(b);
    }
    ChannelEdges();
    size_t nodes = loose_.size();
    for (const auto& ops : block_ops_) nodes += ops.size();
    for (const auto& vars : block_vars_) nodes += vars.size();
    std::ostringstream out;
    out << kSizeComment << nodes << " nodes, " << edges_.size() << " edges\n"
        << "digraph program {\n"
        << "  graph [rankdir=TB, compound=true, newrank=true, fontname=\"Helvetica\", fontsize=11, "
           "nodesep=0.25, ranksep=0.35];\n"
        << "  node [fontname=\"Helvetica\", fontsize=10, height=0.3];\n"
        << "  edge [fontname=\"Helvetica\", fontsize=9, arrowsize=0.6];\n";
    std::set<int> emitted;
    for (int b = 0; b < blocks_; ++b) {
      if (drawn_[static_cast<size_t>(b)] && !DrawnParent(b))
        EmitBlock(out, b, b != 0 || options_.block > 0, emitted, 1);
    }
    for (int b = 0; b < blocks_; ++b) {  // blocks whose parents form a cycle: on their own
      if (drawn_[static_cast<size_t>(b)]) EmitBlock(out, b, true, emitted, 1);
    }
    for (const auto& n : loose_) out << "  " << n << "\n";
    for (const auto& e : edges_) out << "  " << e << "\n";
    if (!notes_.empty()) {
      std::string text = std::to_string(notes_.size()) + " problem(s) not at an op:";
      for (size_t i = 0; i < notes_.size() && i < kNotedProblems; ++i) text += "\n" + notes_[i];
      if (notes_.size() > kNotedProblems) text += "\nand " + std::to_string(notes_.size() - kNotedProblems) + " more";
      out << "  problems [shape=note, style=filled, fillcolor=\"#ffd6d6\", label=\"" << Escape(text) << "\"];\n";
    }
    out << "}\n";
    return out.str();
  }

 private:
  struct Owner {
    int block = -1, op = -1;
    std::string label;
  };

  bool ValidBlock(int b) const { return b >= 0 && b < blocks_; }
  int Parent(int b) const {
    const int parent = p_.blocks(b).parent_idx();
    return ValidBlock(parent) && parent != b ? parent : -1;
  }
  bool DrawnParent(int b) const {
    const int parent = Parent(b);
    return parent >= 0 && drawn_[static_cast<size_t>(parent)];
  }

  // Which op runs each sub-block, and how to label it.
  void FindOwners() {
    for (int b = 0; b < blocks_; ++b) {
      const auto& block = p_.blocks(b);
      for (int i = 0; i < block.ops_size(); ++i) {
        const auto& op = block.ops(i);
        std::vector<SelectCase> cases;
        for (const auto& a : op.attrs()) {
          if (a.name() == "cases" && op.type() == "select") {
            for (const auto& s : a.strings()) cases.push_back(ParseCase(s));
          }
        }
        for (const auto& a : op.attrs()) {
          std::vector<int> targets;
          if (a.type() == proto::BLOCK) targets.push_back(a.block_idx());
          if (a.type() == proto::BLOCKS) targets.assign(a.blocks_idx().begin(), a.blocks_idx().end());
          for (int k : targets) {
            if (!ValidBlock(k) || owners_.count(k)) continue;
            std::string label = op.type() == "while" ? "while body" : op.type();
            if (a.name() != "sub_block") label += " " + a.name();
            owners_[k] = Owner{b, i, "block " + std::to_string(k) + ": " + label};
            if (op.type() == "select") LabelCases(k, cases);
          }
        }
      }
    }
  }

  // Variables used as channels, in any block: drawn as channels wherever they appear.
  void FindChannels() {
    for (const auto& block : p_.blocks()) {
      for (const auto& op : block.ops()) {
        for (const auto& slot : op.inputs()) {
          if (slot.parameter() == "Channel") channels_.insert(slot.arguments().begin(), slot.arguments().end());
        }
        if (op.type() == "channel_create") {
          for (const auto& slot : op.outputs()) channels_.insert(slot.arguments().begin(), slot.arguments().end());
        }
      }
    }
  }

  // A select's block of cases holds one conditional_block per case, in case order.
  void LabelCases(int cases_block, const std::vector<SelectCase>& cases) {
    size_t index = 0;
    for (const auto& op : p_.blocks(cases_block).ops()) {
      if (op.type() != "conditional_block" || index >= cases.size()) continue;
      for (const auto& a : op.attrs()) {
        if (a.type() == proto::BLOCK && ValidBlock(a.block_idx())) {
          case_labels_[a.block_idx()] =
              "block " + std::to_string(a.block_idx()) + ": " + CaseLabel(index, cases[index]);
        }
      }
      ++index;
    }
  }

  // The block declaring `name`, up the chain from `b`, and its declaration; {-1, null} if none.
  std::pair<int, const proto::VarDesc*> Declaration(int b, const std::string& name) const {
    for (int hops = 0; b >= 0 && hops <= blocks_; ++hops, b = Parent(b)) {
      for (const auto& v : p_.blocks(b).vars()) {
        if (v.name() == name) return {b, &v};
      }
    }
    return {-1, nullptr};
  }

  // The node of variable `name` as block `b` sees it, made on first use.
  std::string VarNode(int b, const std::string& name) {
    auto [declared_in, decl] = Declaration(b, name);
    if (decl == nullptr) {  // undeclared: the node of its first use up the chain, if any
      for (int up = b, hops = 0; up >= 0 && hops <= blocks_; up = Parent(up), ++hops) {
        if (auto it = var_ids_.find({up, name}); it != var_ids_.end()) return it->second;
      }
    }
    const int home = declared_in >= 0 ? declared_in : b;
    const auto key = std::make_pair(home, name);
    if (auto it = var_ids_.find(key); it != var_ids_.end()) return it->second;
    const std::string id = "v" + std::to_string(var_ids_.size());
    var_ids_[key] = id;
    std::string label = name, style;
    if (decl == nullptr) {
      style = channels_.count(name) ? "shape=hexagon, style=dashed" : "style=dashed";
    } else {
      const auto& type = decl->type();
      if (type.type() == proto::VarType::LOD_TENSOR && type.has_lod_tensor()) {
        label += "\n" + DimsText(type.lod_tensor().tensor());
      } else if (type.type() == proto::VarType::SELECTED_ROWS && type.has_selected_rows()) {
        label += "\nrows of " + DimsText(type.selected_rows());
      } else {
        label += "\n" + VarTypeName(type.type());
      }
      const bool tensor = type.type() == proto::VarType::LOD_TENSOR || type.type() == proto::VarType::SELECTED_ROWS;
      if (type.type() == proto::VarType::CHANNEL || channels_.count(name)) {
        style = "shape=hexagon, style=filled, fillcolor=\"#ffe0b3\"";
      } else if (tensor && decl->persistable()) {
        style = "style=filled, fillcolor=\"#cfe2ff\"";
      }
    }
    if (std::find(options_.highlight.begin(), options_.highlight.end(), name) != options_.highlight.end()) {
      style += std::string(style.empty() ? "" : ", ") + "color=red, penwidth=2.5";
    }
    const std::string node = id + " [label=\"" + Escape(label) + "\"" + (style.empty() ? "" : ", " + style) + "];";
    if (drawn_[static_cast<size_t>(home)]) {
      block_vars_[static_cast<size_t>(home)].push_back(node);
    } else {
      loose_.push_back(node);  // an outer variable of the one block drawn
    }
    return id;
  }

  static std::string OpId(int b, int i) { return "o" + std::to_string(b) + "_" + std::to_string(i); }

  void DrawOps(int b) {
    const auto& block = p_.blocks(b);
    for (int i = 0; i < block.ops_size(); ++i) {
      const auto& op = block.ops(i);
      const std::string id = OpId(b, i);
      std::string label = op.type().empty() ? "(no type)" : op.type();
      size_t shown = 0;
      for (const auto& a : op.attrs()) {
        const std::string text = ShortAttr(a);
        if (!text.empty() && shown++ < kLabelAttrs) label += "\n" + text;
      }
      std::string style = "shape=box, style=\"rounded,filled\", fillcolor=\"#f2f2f2\"";
      if (auto it = problems_.find({b, i}); it != problems_.end()) {
        style = "shape=box, style=\"rounded,filled,bold\", color=red, fillcolor=\"#ffd6d6\", tooltip=\"" +
                Escape(it->second) + "\"";
      }
      block_ops_[static_cast<size_t>(b)].push_back(id + " [label=\"" + Escape(label) + "\", " + style + "];");
      for (const auto& slot : op.inputs()) {
        for (const auto& name : slot.arguments()) {
          if (!name.empty()) edges_.push_back(VarNode(b, name) + " -> " + id + ";");
        }
      }
      std::set<std::string> read;
      for (const auto& slot : op.inputs()) read.insert(slot.arguments().begin(), slot.arguments().end());
      for (const auto& slot : op.outputs()) {
        for (const auto& name : slot.arguments()) {
          if (name.empty()) continue;
          // Written in place (an optimizer's ParamOut): drawn, but left out of the ranking,
          // so the graph still reads from top to bottom.
          edges_.push_back(id + " -> " + VarNode(b, name) +
                           (read.count(name) ? " [constraint=false, color=\"#3366cc\"];" : ";"));
        }
      }
      for (const auto& a : op.attrs()) {
        std::vector<int> targets;
        if (a.type() == proto::BLOCK) targets.push_back(a.block_idx());
        if (a.type() == proto::BLOCKS) targets.assign(a.blocks_idx().begin(), a.blocks_idx().end());
        for (int k : targets) {
          if (!ValidBlock(k)) {
            notes_.push_back("block " + std::to_string(b) + ", op " + std::to_string(i) + " (" + op.type() +
                             "): " + a.name() + " names block " + std::to_string(k) + ", which does not exist");
          } else if (drawn_[static_cast<size_t>(k)] && k != b) {
            edges_.push_back(id + " -> " + Anchor(k) + " [style=dashed, color=\"#666666\", lhead=cluster_" +
                             std::to_string(k) + "];");
          }
        }
      }
      RecordChannelUse(op, id);
    }
  }

  // A node inside block k's cluster for edges to point at.
  std::string Anchor(int k) {
    if (p_.blocks(k).ops_size() > 0) return OpId(k, 0);
    const std::string id = "anchor" + std::to_string(k);
    if (anchors_.insert(k).second) block_ops_[static_cast<size_t>(k)].push_back(id + " [shape=point, style=invis];");
    return id;
  }

  void RecordChannelUse(const proto::OpDesc& op, const std::string& id) {
    const auto channel_of = [&]() -> std::string {
      for (const auto& slot : op.inputs()) {
        if (slot.parameter() == "Channel" && slot.arguments_size() > 0) return slot.arguments(0);
      }
      return "";
    };
    if (op.type() == "channel_send") senders_[channel_of()].push_back(id);
    if (op.type() == "channel_recv") receivers_[channel_of()].push_back(id);
    if (op.type() != "select") return;
    for (const auto& a : op.attrs()) {
      if (a.name() != "cases") continue;
      for (const auto& s : a.strings()) {
        const SelectCase c = ParseCase(s);
        if (c.kind == 1) senders_[c.channel].push_back(id);
        if (c.kind == 2) receivers_[c.channel].push_back(id);
      }
    }
  }

  void ChannelEdges() {
    for (const auto& [channel, senders] : senders_) {
      auto it = receivers_.find(channel);
      if (channel.empty() || it == receivers_.end()) continue;
      for (const auto& from : senders) {
        for (const auto& to : it->second) {
          edges_.push_back(from + " -> " + to + " [style=dashed, color=red, fontcolor=red, constraint=false, label=\"" +
                           Escape(channel) + "\"];");
        }
      }
    }
  }

  void EmitBlock(std::ostringstream& out, int b, bool cluster, std::set<int>& emitted, int depth) {
    if (!emitted.insert(b).second) return;
    const std::string pad(static_cast<size_t>(depth) * 2, ' ');
    if (cluster) {
      std::string label = "block " + std::to_string(b);
      if (auto it = case_labels_.find(b); it != case_labels_.end()) {
        label = it->second;
      } else if (auto o = owners_.find(b); o != owners_.end()) {
        label = o->second.label;
      }
      out << pad << "subgraph cluster_" << b << " {\n"
          << pad << "  label=\"" << Escape(label) << "\"; style=rounded; color=\"#999999\"; fontcolor=\"#444444\";\n";
    }
    for (const auto& n : block_vars_[static_cast<size_t>(b)]) out << pad << "  " << n << "\n";
    for (const auto& n : block_ops_[static_cast<size_t>(b)]) out << pad << "  " << n << "\n";
    for (int k = 0; k < blocks_; ++k) {
      if (k != b && drawn_[static_cast<size_t>(k)] && Parent(k) == b) EmitBlock(out, k, true, emitted, depth + 1);
    }
    if (cluster) out << pad << "}\n";
  }

  const proto::ProgramDesc& p_;
  const GraphOptions& options_;
  const int blocks_;
  std::vector<bool> drawn_;
  std::vector<std::vector<std::string>> block_vars_, block_ops_;  // node statements per cluster
  std::vector<std::string> loose_, edges_, notes_;
  std::map<std::pair<int, std::string>, std::string> var_ids_;  // (declaring block, name) -> node
  std::map<std::pair<int, int>, std::string> problems_;         // (block, op) -> messages
  std::map<int, Owner> owners_;
  std::map<int, std::string> case_labels_;
  std::set<std::string> channels_;
  std::set<int> anchors_;
  std::map<std::string, std::vector<std::string>> senders_, receivers_;  // channel -> op nodes
};

}  // namespace

std::string ProgramToDot(const proto::ProgramDesc& program, const GraphOptions& options) {
  return Drawer(program, options).Draw();
}

}  // namespace rill::core
