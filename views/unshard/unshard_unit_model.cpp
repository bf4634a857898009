#include "views/unshard/unshard_unit_model.h"

#include <QFont>
#include <QLocale>
#include <QStringList>
#include <algorithm>
#include <exception>
#include <map>

#include "storage/errors.h"
#include "views/unshard/unshard_session.h"

namespace ss::unshard {

UnshardUnitModel::UnshardUnitModel(UnshardSession* session, QObject* parent) : QAbstractItemModel(parent), session_(session) {
  node_of_unit_.assign(static_cast<std::size_t>(session_->unit_count()), -1);
  std::map<std::string, int> group_node;
  auto add = [&](Node n) {
    const int id = static_cast<int>(nodes_.size());
    auto& siblings = n.parent < 0 ? top_ : nodes_[static_cast<std::size_t>(n.parent)].children;
    n.row = static_cast<int>(siblings.size());
    siblings.push_back(id);
    nodes_.push_back(std::move(n));
    return id;
  };
  for (int u = 0; u < session_->unit_count(); ++u) {
    const auto& su = session_->unit(u);
    int parent_node = -1;
    if (!su.group.empty() && su.group != su.name) {
      auto it = group_node.find(su.group);
      if (it == group_node.end()) it = group_node.emplace(su.group, add({-1, QString::fromStdString(su.group), -1, 0, {}})).first;
      parent_node = it->second;
    }
    node_of_unit_[static_cast<std::size_t>(u)] = add({u, {}, parent_node, 0, {}});
  }
}

QModelIndex UnshardUnitModel::index(int row, int column, const QModelIndex& parent) const {
  if (column < 0 || column >= ColCount || row < 0) return {};
  if (parent.isValid() && parent.column() != 0) return {};
  const auto& kids = children_of(parent.isValid() ? static_cast<int>(parent.internalId()) : -1);
  if (row >= static_cast<int>(kids.size())) return {};
  return createIndex(row, column, static_cast<quintptr>(kids[static_cast<std::size_t>(row)]));
}

QModelIndex UnshardUnitModel::parent(const QModelIndex& child) const {
  if (!child.isValid()) return {};
  const int p = nodes_[static_cast<std::size_t>(child.internalId())].parent;
  if (p < 0) return {};
  return createIndex(nodes_[static_cast<std::size_t>(p)].row, 0, static_cast<quintptr>(p));
}

int UnshardUnitModel::rowCount(const QModelIndex& parent) const {
  if (parent.isValid() && parent.column() != 0) return 0;
  return static_cast<int>(children_of(parent.isValid() ? static_cast<int>(parent.internalId()) : -1).size());
}

int UnshardUnitModel::columnCount(const QModelIndex&) const { return ColCount; }

int UnshardUnitModel::unit_of(const QModelIndex& index) const {
  return index.isValid() ? nodes_[static_cast<std::size_t>(index.internalId())].unit : -1;
}

QModelIndex UnshardUnitModel::index_of_unit(int unit) const {
  if (unit < 0 || unit >= static_cast<int>(node_of_unit_.size())) return {};
  const int n = node_of_unit_[static_cast<std::size_t>(unit)];
  return createIndex(nodes_[static_cast<std::size_t>(n)].row, 0, static_cast<quintptr>(n));
}

QVariant UnshardUnitModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid()) return {};
  const Node& n = nodes_[static_cast<std::size_t>(index.internalId())];
  if (n.unit < 0) {
    if (role == Qt::DisplayRole && index.column() == ColModule) return n.group;
    return {};
  }
  const auto& u = session_->unit(n.unit);
  const auto& pred = session_->prediction();
  const int bucket = pred.bucket_of_unit.empty() ? -1 : pred.bucket_of_unit[static_cast<std::size_t>(n.unit)];
  const bool overridden = bucket >= 0 && session_->state().bucket_cap_overrides_mb.count(bucket) > 0;
  const int listed = pred.listed_bucket_of_unit.empty() ? -1 : pred.listed_bucket_of_unit[static_cast<std::size_t>(n.unit)];
  switch (role) {
    case Qt::DisplayRole:
      switch (index.column()) {
        case ColModule: return u.name.empty() ? QStringLiteral("(root)") : QString::fromStdString(u.name);
        case ColClass: return QString::fromStdString(u.class_name);
        case ColParams: return QLocale(QLocale::English).toString(static_cast<qlonglong>(u.param_count));
        case ColCheckpoint:
          return checkpoint_label(QString::fromStdString(session_->state().checkpoint[static_cast<std::size_t>(n.unit)]));
        case ColOffload: {
          const QString mode = QString::fromStdString(session_->state().offload);
          if (mode == QLatin1String("none")) return QStringLiteral("none");
          const auto ns = pred.host_copy_ns.empty() ? 0 : pred.host_copy_ns[static_cast<std::size_t>(n.unit)];
          return QStringLiteral("%1 · %2 ms").arg(mode).arg(static_cast<double>(ns) / 1e6, 0, 'f', 3);
        }
        case ColExposedAg: {
          const auto ns = pred.exposed_ag_ns[static_cast<std::size_t>(n.unit)];
          return QString::number(static_cast<double>(ns) / 1e6, 'f', 3);
        }
        case ColBucket:
          if (listed >= 0) return QStringLiteral("list %1").arg(listed + 1);
          return bucket >= 0 ? QStringLiteral("#%1").arg(bucket) : QStringLiteral("—");
        case ColBucketCap:
          if (bucket < 0) return QStringLiteral("—");
          return QString::number(session_->bucket_cap_of(bucket), 'g', 10) + (overridden ? QStringLiteral(" (override)") : QString());
        default: return {};
      }
    case Qt::EditRole:
      if (index.column() == ColBucketCap && bucket >= 0) return session_->bucket_cap_of(bucket);
      if (index.column() == ColCheckpoint) return QString::fromStdString(session_->state().checkpoint[static_cast<std::size_t>(n.unit)]);
      return {};
    case ChoicesRole:
      if (index.column() == ColCheckpoint) {
        QStringList out;
        for (const auto& c : session_->checkpoint_choices(n.unit)) out << QString::fromStdString(c);
        return out;
      }
      return {};
    case Qt::FontRole:
      if (index.column() == ColBucketCap && overridden) {
        QFont f;
        f.setBold(true);
        return f;
      }
      return {};
    case Qt::CheckStateRole:
      if (index.column() == ColModule) return session_->state().keep[static_cast<std::size_t>(n.unit)] ? Qt::Checked : Qt::Unchecked;
      return {};
    case Qt::TextAlignmentRole:
      if (index.column() == ColParams || index.column() == ColExposedAg || index.column() == ColBucketCap || index.column() == ColOffload) return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
      return {};
    case Qt::ToolTipRole:
      if (index.column() == ColModule)
        return session_->unit_fixed(n.unit) ? QStringLiteral("The root module: FSDP2 keeps it unsharded after forward")
                                            : QStringLiteral("Checked: reshard_after_forward=False (no backward all-gather, more memory)");
      if (index.column() == ColCheckpoint) {
        if (session_->unit_fixed(n.unit)) return QStringLiteral("The root is never checkpointed (it holds the head and the tail)");
        if (session_->checkpoint_choices(n.unit).empty())
          return QStringLiteral("Checkpointing this unit would change nothing: it saves no more than its input");
        return QStringLiteral("Activation checkpointing: full reruns the unit's forward before its backward and keeps only its "
                              "input; selective (a sub-module, model descriptions only) reruns that sub-module. Double-click to change.");
      }
      if (index.column() == ColOffload)
        return QStringLiteral("Offload is set for the whole model (the panel's Offload box). With it on: this unit's host copies "
                              "(shard up before each all-gather, gradients down after each reduce-scatter) in the step shown.");
      if (index.column() == ColBucket && listed >= 0) {
        QStringList members;
        for (const auto& m : pred.listed_buckets[static_cast<std::size_t>(listed)]) members << QString::fromStdString(m);
        return QStringLiteral("One all-gather for %1 (the plan's bucket list %2: fully_shard([...]) in FSDP2); "
                              "Plan buckets chooses such lists, Undo takes them back")
            .arg(members.join(QStringLiteral(" + ")))
            .arg(listed + 1);
      }
      if (index.column() == ColBucketCap || index.column() == ColBucket)
        return bucket < 0 ? QStringLiteral("Not auto-bucketed: set a default bucket cap to merge consecutive units into one all-gather")
                          : QStringLiteral("Units are merged in forward order while bucket #%1 stays under this cap (MB). "
                                           "Edit to override this bucket's cap; 0 removes the override.").arg(bucket);
      return {};
    default: return {};
  }
}

bool UnshardUnitModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  const int u = unit_of(index);
  if (role == Qt::EditRole && index.column() == ColBucketCap) return set_bucket_cap(u, value);
  if (role == Qt::EditRole && index.column() == ColCheckpoint) return set_checkpoint(u, value);
  if (role != Qt::CheckStateRole || index.column() != ColModule || u < 0 || session_->unit_fixed(u)) return false;
  const bool keep = value.toInt() == Qt::Checked;
  return change([&] { session_->set_keep(u, keep); });
}

bool UnshardUnitModel::change(const std::function<void()>& apply) {
  try {
    apply();
  } catch (const std::exception& e) {  // the simulator refused it (ProfileError); the session kept its state
    emit changeFailed(QString::fromStdString(e.what()));
    return false;
  }
  refresh();
  emit sessionChanged();
  return true;
}

bool UnshardUnitModel::set_bucket_cap(int unit, const QVariant& value) {
  if (unit < 0) return false;
  const auto& buckets = session_->prediction().bucket_of_unit;
  const int bucket = buckets.empty() ? -1 : buckets[static_cast<std::size_t>(unit)];
  bool ok = false;
  const double mb = value.toDouble(&ok);
  if (bucket < 0 || !ok || !(mb >= 0) || mb > 1e9) return false;  // NaN and absurd sizes refused
  return change([&] { session_->set_bucket_cap_override(bucket, mb); });
}

bool UnshardUnitModel::set_checkpoint(int unit, const QVariant& value) {
  if (unit < 0 || !value.canConvert<QString>()) return false;
  const std::string mode = value.toString().toStdString();
  const auto choices = session_->checkpoint_choices(unit);
  if (std::find(choices.begin(), choices.end(), mode) == choices.end()) return false;  // not one this unit can take
  return change([&] { session_->set_checkpoint(unit, mode); });
}

QString UnshardUnitModel::checkpoint_label(const QString& value) {
  if (value.isEmpty() || value == QLatin1String("none") || value == QLatin1String("full")) return value.isEmpty() ? QStringLiteral("none") : value;
  return QStringLiteral("selective: ") + value;
}

Qt::ItemFlags UnshardUnitModel::flags(const QModelIndex& index) const {
  if (!index.isValid()) return Qt::NoItemFlags;
  Qt::ItemFlags f = Qt::ItemIsEnabled | Qt::ItemIsSelectable;
  const int u = unit_of(index);
  if (index.column() == ColModule && u >= 0 && !session_->unit_fixed(u)) f |= Qt::ItemIsUserCheckable;
  if (index.column() == ColCheckpoint && u >= 0 && !session_->checkpoint_choices(u).empty()) f |= Qt::ItemIsEditable;
  if (index.column() == ColBucketCap && u >= 0) {
    const auto& buckets = session_->prediction().bucket_of_unit;
    if (!buckets.empty() && buckets[static_cast<std::size_t>(u)] >= 0) f |= Qt::ItemIsEditable;
  }
  return f;
}

QVariant UnshardUnitModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case ColModule: return QStringLiteral("Module (keep unsharded)");
    case ColClass: return QStringLiteral("Class");
    case ColParams: return QStringLiteral("Parameters");
    case ColCheckpoint: return QStringLiteral("Checkpoint");
    case ColOffload: return QStringLiteral("Offload");
    case ColExposedAg: return QStringLiteral("Exposed AG (ms)");
    case ColBucket: return QStringLiteral("Bucket");
    case ColBucketCap: return QStringLiteral("Bucket cap (MB)");
    default: return {};
  }
}

void UnshardUnitModel::refresh() {
  // Every unit row's check box and numbers may change: one dataChanged per parent (the top level
  // and each group), not one per row, since each signal makes the tree re-measure its
  // resize-to-contents columns.
  auto changed = [&](int parent_node) {
    const auto& kids = children_of(parent_node);
    if (kids.empty()) return;
    const int first = kids.front(), last = kids.back();
    emit dataChanged(createIndex(0, 0, static_cast<quintptr>(first)),
                     createIndex(static_cast<int>(kids.size()) - 1, ColCount - 1, static_cast<quintptr>(last)));
  };
  changed(-1);
  for (std::size_t n = 0; n < nodes_.size(); ++n)
    if (nodes_[n].unit < 0) changed(static_cast<int>(n));
}

}  // namespace ss::unshard
