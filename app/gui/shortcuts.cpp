#include "app/gui/shortcuts.h"

namespace ss::gui {

QString shortcuts_html() {
  struct Row {
    const char* keys;
    const char* what;
  };
  static const Row rows[] = {
      {"Ctrl+O", "open a profile (or drop a .ssdb file on the window)"},
      {"W / S", "zoom in / out around the mouse"},
      {"Ctrl+wheel", "zoom around the mouse"},
      {"A / D, left drag, Shift+wheel", "pan in time"},
      {"wheel", "scroll the tracks"},
      {"click", "select an event (details dock; arrows to the same collective on other ranks); a grey folded box zooms in"},
      {"right drag or Shift+left drag", "select a time range over tracks: aggregate table per kernel and per module"},
      {"click a track label", "collapse / expand the track"},
      {"Shift+click a track label", "pin / unpin the track at the top"},
      {"Ctrl+F", "find events by name; Enter / F3 next, Shift+Enter / Shift+F3 previous"},
      {"Esc", "close find, clear the selection and the time range"},
      {"Ctrl+0", "show the whole profile"},
      {"Ctrl+Shift+R", "reset the window layout"},
  };
  QString html = "<table cellspacing=6>";
  for (const Row& r : rows) html += QString("<tr><td><b>%1</b></td><td>%2</td></tr>").arg(r.keys, r.what);
  return html + "</table>";
}

}  // namespace ss::gui
