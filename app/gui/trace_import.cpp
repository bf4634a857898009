#include "app/gui/trace_import.h"

#include <QCryptographicHash>
#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QStandardPaths>
#include <cstring>

#include "profiler/import/import.h"
#include "storage/errors.h"
#include "storage/profile_reader.h"

namespace ss::gui {

namespace {

// "run.pt.trace.json.gz" -> "run.pt.trace"; "mfu.sqlite" -> "mfu".
QString stem(const QString& path) {
  QString name = QFileInfo(path).fileName();
  for (const char* suffix : {".gz", ".json", ".sqlite", ".db"})
    if (name.endsWith(suffix, Qt::CaseInsensitive) && name.size() > static_cast<qsizetype>(std::strlen(suffix)))
      name.chop(static_cast<qsizetype>(std::strlen(suffix)));
  return name;
}

QStringList absolute(const QStringList& inputs) {
  QStringList out;
  for (const auto& i : inputs) out << QFileInfo(i).absoluteFilePath();
  return out;
}

}  // namespace

bool needs_import(const QString& path) {
  try {
    return import::detect_format(path.toStdString()) != import::Format::Unknown;
  } catch (const ProfileError&) {
    return false;  // a profile, another SQLite database, an unreadable file: the reader says which
  }
}

QString default_import_path(const QStringList& inputs) {
  if (inputs.isEmpty()) return {};
  const QFileInfo first(inputs.front());
  if (inputs.size() == 1) return first.dir().filePath(stem(inputs.front()) + ".ssdb");
  // Several rank files: their common name ("worker0_step..", "worker1_step.." -> "worker").
  QString prefix = stem(inputs.front());
  for (const auto& i : inputs) {
    const QString s = stem(i);
    qsizetype n = 0;
    while (n < prefix.size() && n < s.size() && prefix[n] == s[n]) ++n;
    prefix.truncate(n);
  }
  while (!prefix.isEmpty() && (prefix.back().isDigit() || QString("_-. ").contains(prefix.back()))) prefix.chop(1);
  if (prefix.isEmpty()) prefix = "imported";
  return first.dir().filePath(QString("%1-%2-files.ssdb").arg(prefix).arg(inputs.size()));
}

QString temporary_import_dir() {
  return QDir(QStandardPaths::writableLocation(QStandardPaths::TempLocation)).filePath("shardscope-imports");
}

bool is_up_to_date_import(const QString& profile, const QStringList& inputs) {
  const QFileInfo info(profile);
  if (!info.exists()) return false;
  for (const auto& i : inputs)
    if (QFileInfo(i).lastModified() > info.lastModified()) return false;
  try {
    sql::Db db = open_profile_readonly(profile.toStdString());
    sql::Stmt s(db.get(), "SELECT source_files FROM origin WHERE id = 1");
    if (!s.step()) return false;
    return QString::fromStdString(s.col_text(0)) == absolute(inputs).join('\n');
  } catch (const ProfileError&) {
    return false;  // not a (readable) profile: not ours to reuse, nor to overwrite
  }
}

ImportTarget choose_import_target(const QStringList& inputs, const QString& wanted) {
  ImportTarget t;
  t.path = wanted.isEmpty() ? default_import_path(inputs) : wanted;
  const QFileInfo info(t.path);
  if (info.exists()) {
    if (is_up_to_date_import(t.path, inputs)) {
      t.reuse = true;
      return t;
    }
    // A user's chosen name is theirs to overwrite (the save dialog asked); a default one is not.
    if (!wanted.isEmpty() && info.isWritable()) return t;
  } else if (QFileInfo(info.absolutePath()).isWritable()) {
    return t;
  }
  // The temporary folder, under a name unique to these inputs, so that reopening reuses it.
  const QByteArray key = QCryptographicHash::hash(absolute(inputs).join('\n').toUtf8(), QCryptographicHash::Sha1).toHex().left(10);
  QDir().mkpath(temporary_import_dir());
  t.path = QDir(temporary_import_dir()).filePath(QString("%1-%2.ssdb").arg(QFileInfo(t.path).completeBaseName(), QString::fromLatin1(key)));
  t.beside = false;
  t.reuse = is_up_to_date_import(t.path, inputs);
  return t;
}

}  // namespace ss::gui
