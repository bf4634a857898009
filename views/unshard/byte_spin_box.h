// A spin box for a size in bytes that reads and writes it by the project's unit rules: it shows
// "99 MiB" or "80 GiB" (storage/units.h format_bytes), accepts "124MiB", "0.5 GiB", "8e10", and
// steps by an eighth of the power of two below the value, so a budget of 124 MiB does not read
// "0.121 GiB" beside a peak written "99 MiB".
#pragma once

#include <QDoubleSpinBox>

namespace ss::unshard {

class ByteSpinBox : public QDoubleSpinBox {
 public:
  explicit ByteSpinBox(QWidget* parent = nullptr);
  std::int64_t bytes() const { return static_cast<std::int64_t>(value()); }
  void set_bytes(std::int64_t b) { setValue(static_cast<double>(b)); }

  QString textFromValue(double value) const override;
  double valueFromText(const QString& text) const override;
  QValidator::State validate(QString& text, int& pos) const override;
  void stepBy(int steps) override;
};

}  // namespace ss::unshard
