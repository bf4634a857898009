#include "views/compare/compare_table_model.h"

#include <cmath>
#include <map>

namespace ss::compareview {

namespace {
QString ms(TimeNs ns) { return QString::number(static_cast<double>(ns) / 1e6, 'f', 3); }
const QString kDash = QString::fromUtf8("\u2014");
}  // namespace

Presence presence_of(const compare::ModuleDiff& r) {
  if (r.count_a > 0 && r.count_b == 0) return Presence::OnlyA;
  if (r.count_b > 0 && r.count_a == 0) return Presence::OnlyB;
  return Presence::Both;
}

PresenceCounts count_one_sided(const std::vector<compare::ModuleDiff>& rows) {
  // A module is one-sided when no phase of it runs on the other side.
  std::map<std::string, std::pair<bool, bool>> sides;  // fqn -> (in A, in B)
  for (const auto& r : rows) {
    auto& s = sides[r.fqn];
    s.first = s.first || r.count_a > 0;
    s.second = s.second || r.count_b > 0;
  }
  PresenceCounts c;
  for (const auto& [fqn, s] : sides) {
    c.only_a += s.first && !s.second;
    c.only_b += s.second && !s.first;
  }
  return c;
}

QString one_sided_text(const PresenceCounts& c) {
  if (c.only_a == 0 && c.only_b == 0) return {};
  return QStringLiteral("%1 module%2 only in A, %3 only in B").arg(c.only_a).arg(c.only_a == 1 ? "" : "s").arg(c.only_b);
}

void CompareTableModel::set_rows(std::vector<compare::ModuleDiff> rows) {
  beginResetModel();
  rows_ = std::move(rows);
  endResetModel();
}

int CompareTableModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(rows_.size()); }
int CompareTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColCount; }

QVariant CompareTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= static_cast<int>(rows_.size())) return {};
  const auto& r = rows_[static_cast<std::size_t>(index.row())];
  const Presence side = presence_of(r);
  const bool one_sided = side != Presence::Both;
  const auto err = r.time.error_pct();
  if (role == PresenceRole) return static_cast<int>(side);
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case ColModule: return r.fqn.empty() ? QStringLiteral("(root)") : QString::fromStdString(r.fqn);
      case ColPhase: return QString::fromUtf8(to_string(r.phase).data(), static_cast<qsizetype>(to_string(r.phase).size()));
      case ColA: return side == Presence::OnlyB ? kDash : ms(r.time.a);
      case ColB: return side == Presence::OnlyA ? kDash : ms(r.time.b);
      case ColDelta: return one_sided ? kDash : (r.time.delta() > 0 ? QStringLiteral("+") : QString()) + ms(r.time.delta());
      case ColError:
        if (one_sided) return side == Presence::OnlyA ? QStringLiteral("only in A") : QStringLiteral("only in B");
        return err ? QString::number(*err, 'f', 2) : QStringLiteral("n/a");
      default: return {};
    }
  }
  if (role == SortRole) {
    switch (index.column()) {
      case ColModule: return QString::fromStdString(r.fqn);
      case ColPhase: return static_cast<int>(r.phase);
      case ColA: return side == Presence::OnlyB ? -1LL : static_cast<qlonglong>(r.time.a);
      case ColB: return side == Presence::OnlyA ? -1LL : static_cast<qlonglong>(r.time.b);
      case ColDelta: return one_sided ? -1LL : static_cast<qlonglong>(std::llabs(r.time.delta()));  // largest discrepancy first
      case ColError: return one_sided || !err ? -1.0 : std::fabs(*err);
      default: return {};
    }
  }
  if (role == Qt::ToolTipRole && one_sided)
    return side == Presence::OnlyA ? QStringLiteral("This module does not run in B's compared window")
                                   : QStringLiteral("This module does not run in A's compared window");
  if (role == Qt::TextAlignmentRole && index.column() >= ColA) return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
  return {};
}

QVariant CompareTableModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal) return {};
  if (role == Qt::ToolTipRole && section == ColDelta) return QStringLiteral("B − A; sorts by size (|delta|)");
  if (role != Qt::DisplayRole) return {};
  switch (section) {
    case ColModule: return QStringLiteral("Module");
    case ColPhase: return QStringLiteral("Phase");
    case ColA: return QStringLiteral("A (ms)");
    case ColB: return QStringLiteral("B (ms)");
    case ColDelta: return QStringLiteral("Delta (ms)");
    case ColError: return QStringLiteral("Error %");
    default: return {};
  }
}

}  // namespace ss::compareview
