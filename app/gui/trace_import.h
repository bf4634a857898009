// Opening other tools' traces in the app: which inputs need importing (Kineto JSON / .json.gz,
// nsys SQLite exports) and where their profile goes. A single trace X.json.gz is imported to
// X.ssdb beside it; several rank files to <common name>-<N>-files.ssdb beside the first. The
// import goes to a temporary folder instead when that folder is not writable, or when a file of
// that name exists that is not this import's up-to-date result (it is never overwritten). A
// profile from an earlier import of the same files that is newer than all of them is reused.
#pragma once

#include <QString>
#include <QStringList>

namespace ss::gui {

// True when `path` is a trace the importer reads (by content, as `shardscope import` detects it);
// false for a ShardScope profile and for anything else (the profile reader then says what it is).
bool needs_import(const QString& path);

struct ImportTarget {
  QString path;        // the profile to write (or reuse)
  bool reuse = false;  // an up-to-date import of the same inputs is already there
  bool beside = true;  // false: in the temporary folder
};

// `wanted`: a profile path the user chose (File > Import); empty picks the default name.
ImportTarget choose_import_target(const QStringList& inputs, const QString& wanted = {});

// The default profile name for `inputs` beside the first one (see above).
QString default_import_path(const QStringList& inputs);

// The folder used when the profile cannot go beside the trace.
QString temporary_import_dir();

// Whether `profile` is an import of exactly `inputs` (origin.source_files) newer than each of them.
bool is_up_to_date_import(const QString& profile, const QStringList& inputs);

}  // namespace ss::gui
