// The Unshard (what-if) panel's module tree: FSDP units grouped under the parent module they split
// (SimUnit::group), with a "keep unsharded" check box per unit, the unit's class, parameters, its
// activation checkpointing (editable: none, full, or a selective sub-module where the unit has
// them), its offload copies (the global offload mode and the unit's host copy time), the
// exposed all-gather time of the current prediction, the auto-bucket the unit is gathered in and
// that bucket's cap (editable: a per-bucket override of the default cap). Checking a box or
// editing a cap or the checkpointing is an undoable change of the session; refresh() re-reads everything after
// undo/redo or other changes.
#pragma once

#include <QAbstractItemModel>
#include <functional>
#include <vector>

namespace ss::unshard {

class UnshardSession;

class UnshardUnitModel : public QAbstractItemModel {
  Q_OBJECT
 public:
  enum Column { ColModule = 0, ColClass, ColParams, ColCheckpoint, ColOffload, ColExposedAg, ColBucket, ColBucketCap, ColCount };
  // ColCheckpoint: the values the unit can take (QStringList of FsdpPlan::checkpoint values; empty
  // when checkpointing cannot change it), for the panel's combo box editor.
  static constexpr int ChoicesRole = Qt::UserRole + 1;
  // How a checkpoint value reads in the column ("none", "full", "selective: attention").
  static QString checkpoint_label(const QString& value);
  explicit UnshardUnitModel(UnshardSession* session, QObject* parent = nullptr);

  QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
  QModelIndex parent(const QModelIndex& child) const override;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

  // The SimModel unit of an index (-1 for a group row).
  int unit_of(const QModelIndex& index) const;
  QModelIndex index_of_unit(int unit) const;
  void refresh();  // the session changed: every check box and number may differ

 signals:
  // A check box or a bucket cap changed the session (the panel re-reads its numbers).
  void sessionChanged();
  // The simulator refused the change; the message says why.
  void changeFailed(QString message);

 private:
  struct Node {
    int unit = -1;        // SimModel unit, or -1 for a group
    QString group;        // group rows: the parent module's name
    int parent = -1;      // node index, -1 = top level
    int row = 0;          // row under the parent
    std::vector<int> children;
  };
  bool set_bucket_cap(int unit, const QVariant& value);
  bool set_checkpoint(int unit, const QVariant& value);
  // Runs one session change; refreshes and emits sessionChanged, or changeFailed when refused.
  bool change(const std::function<void()>& apply);
  const std::vector<int>& children_of(int node) const { return node < 0 ? top_ : nodes_[static_cast<std::size_t>(node)].children; }

  UnshardSession* session_;
  std::vector<Node> nodes_;
  std::vector<int> top_;
  std::vector<int> node_of_unit_;
};

}  // namespace ss::unshard
