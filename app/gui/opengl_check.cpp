#include "app/gui/opengl_check.h"

#include <QOffscreenSurface>
#include <QOpenGLContext>

namespace ss::gui {

QString opengl_problem() {
  QOpenGLContext context;
  if (!context.create()) return "this display gives no OpenGL context";
  QOffscreenSurface surface;
  surface.setFormat(context.format());
  surface.create();
  if (!surface.isValid() || !context.makeCurrent(&surface)) return "an OpenGL context was made but cannot be used";
  const auto [major, minor] = context.format().version();
  context.doneCurrent();
  if (major < 3)
    return QString("the display's OpenGL is %1.%2; the timeline needs 3.0 or newer").arg(major).arg(minor);
  return {};
}

}  // namespace ss::gui
