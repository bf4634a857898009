#include "views/unshard/byte_spin_box.h"

#include <cmath>

#include "storage/units.h"

namespace ss::unshard {

ByteSpinBox::ByteSpinBox(QWidget* parent) : QDoubleSpinBox(parent) {
  setDecimals(0);  // whole bytes; the text carries the unit
  setRange(1024.0 * 1024.0, std::ldexp(1.0, 60));  // 1 MiB .. 1 EiB
}

QString ByteSpinBox::textFromValue(double value) const {
  return QString::fromStdString(format_bytes(static_cast<std::int64_t>(std::llround(value))));
}

double ByteSpinBox::valueFromText(const QString& text) const {
  const auto b = parse_bytes(text.trimmed().toStdString());
  return b ? static_cast<double>(*b) : value();
}

QValidator::State ByteSpinBox::validate(QString& text, int&) const {
  const auto b = parse_bytes(text.trimmed().toStdString());
  if (b && static_cast<double>(*b) >= minimum() && static_cast<double>(*b) <= maximum()) return QValidator::Acceptable;
  return QValidator::Intermediate;  // e.g. "12" on the way to "12 GiB"
}

void ByteSpinBox::stepBy(int steps) {
  const double v = std::max(value(), minimum());
  const double step = std::ldexp(1.0, static_cast<int>(std::floor(std::log2(v))) - 3);
  setValue(v + steps * step);
  selectAll();
}

}  // namespace ss::unshard
