// Whether this display gives the OpenGL the timeline draws with (Dear ImGui's OpenGL3 backend,
// GLSL 130, inside a QOpenGLWidget). Without it Qt 6 crashes in its first window flush
// (QT_QPA_PLATFORM=offscreen, a remote X server without GLX), so the app checks first and says so.
#pragma once

#include <QString>

namespace ss::gui {

// Empty when an OpenGL 3.0 or newer context can be made current; otherwise what is missing.
// Needs a QGuiApplication.
QString opengl_problem();

}  // namespace ss::gui
