// The app's look: the Fusion style with the dark or the light palette. Fusion draws an unchecked
// check box as a frame a little darker than the window, which vanishes on a dark background;
// the style here outlines check boxes (buttons and item-view check marks) in the text colour.
#pragma once

#include <QPalette>

class QStyle;

namespace ss::gui {

QPalette dark_palette();

// A new Fusion-based style whose check boxes show their frame in any palette (owned by the caller,
// usually handed to QApplication::setStyle).
QStyle* make_app_style();

}  // namespace ss::gui
