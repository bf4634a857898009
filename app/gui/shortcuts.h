// The keyboard and mouse shortcuts, as shown under Help > Shortcuts.
#pragma once

#include <QString>

namespace ss::gui {
QString shortcuts_html();
}
