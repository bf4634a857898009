#include "views/timeline/imgui_qt_bridge.h"

#include <imgui.h>

#include <cfloat>

#include <QFocusEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QWheelEvent>
#include <QWidget>

namespace ss::timeline {

namespace {

// Our KeysDown[] indices: letters use their ASCII code, named keys small numbers below 'A'.
enum : int {
  kTab = 1, kLeft, kRight, kUp, kDown, kPageUp, kPageDown, kHome, kEnd, kInsert, kDelete, kBackspace, kSpace,
  kEnter, kEscape, kKeypadEnter,
};

int key_index(int qt_key) {
  switch (qt_key) {
    case Qt::Key_Tab: return kTab;
    case Qt::Key_Left: return kLeft;
    case Qt::Key_Right: return kRight;
    case Qt::Key_Up: return kUp;
    case Qt::Key_Down: return kDown;
    case Qt::Key_PageUp: return kPageUp;
    case Qt::Key_PageDown: return kPageDown;
    case Qt::Key_Home: return kHome;
    case Qt::Key_End: return kEnd;
    case Qt::Key_Insert: return kInsert;
    case Qt::Key_Delete: return kDelete;
    case Qt::Key_Backspace: return kBackspace;
    case Qt::Key_Space: return kSpace;
    case Qt::Key_Return: return kEnter;
    case Qt::Key_Enter: return kKeypadEnter;
    case Qt::Key_Escape: return kEscape;
    default:
      if (qt_key >= Qt::Key_A && qt_key <= Qt::Key_Z) return 'A' + (qt_key - Qt::Key_A);
      return -1;
  }
}

int mouse_index(Qt::MouseButton b) {
  switch (b) {
    case Qt::LeftButton: return 0;
    case Qt::RightButton: return 1;
    case Qt::MiddleButton: return 2;
    default: return -1;
  }
}

void set_modifiers(ImGuiIO& io, Qt::KeyboardModifiers m) {
  io.KeyCtrl = m & Qt::ControlModifier;
  io.KeyShift = m & Qt::ShiftModifier;
  io.KeyAlt = m & Qt::AltModifier;
  io.KeySuper = m & Qt::MetaModifier;
}

}  // namespace

void ImGuiQtBridge::install(ImGuiContext* context) {
  ImGui::SetCurrentContext(context);
  ImGuiIO& io = ImGui::GetIO();
  io.BackendPlatformName = "shardscope_qt";
  io.KeyMap[ImGuiKey_Tab] = kTab;
  io.KeyMap[ImGuiKey_LeftArrow] = kLeft;
  io.KeyMap[ImGuiKey_RightArrow] = kRight;
  io.KeyMap[ImGuiKey_UpArrow] = kUp;
  io.KeyMap[ImGuiKey_DownArrow] = kDown;
  io.KeyMap[ImGuiKey_PageUp] = kPageUp;
  io.KeyMap[ImGuiKey_PageDown] = kPageDown;
  io.KeyMap[ImGuiKey_Home] = kHome;
  io.KeyMap[ImGuiKey_End] = kEnd;
  io.KeyMap[ImGuiKey_Insert] = kInsert;
  io.KeyMap[ImGuiKey_Delete] = kDelete;
  io.KeyMap[ImGuiKey_Backspace] = kBackspace;
  io.KeyMap[ImGuiKey_Space] = kSpace;
  io.KeyMap[ImGuiKey_Enter] = kEnter;
  io.KeyMap[ImGuiKey_Escape] = kEscape;
  io.KeyMap[ImGuiKey_KeyPadEnter] = kKeypadEnter;
  io.KeyMap[ImGuiKey_A] = 'A';
  io.KeyMap[ImGuiKey_C] = 'C';
  io.KeyMap[ImGuiKey_V] = 'V';
  io.KeyMap[ImGuiKey_X] = 'X';
  io.KeyMap[ImGuiKey_Y] = 'Y';
  io.KeyMap[ImGuiKey_Z] = 'Z';
}

bool ImGuiQtBridge::feed(QEvent* event, QWidget* widget) {
  ImGuiIO& io = ImGui::GetIO();
  switch (event->type()) {
    case QEvent::MouseMove: {
      auto* e = static_cast<QMouseEvent*>(event);
      io.MousePos = ImVec2(static_cast<float>(e->position().x()), static_cast<float>(e->position().y()));
      return true;
    }
    case QEvent::MouseButtonPress:
    case QEvent::MouseButtonDblClick:
    case QEvent::MouseButtonRelease: {
      auto* e = static_cast<QMouseEvent*>(event);
      io.MousePos = ImVec2(static_cast<float>(e->position().x()), static_cast<float>(e->position().y()));
      const int b = mouse_index(e->button());
      if (b >= 0) {
        if (event->type() == QEvent::MouseButtonRelease)
          released_buttons_[b] = true;  // applied after the next frame
        else {
          io.MouseDown[b] = true;
          released_buttons_[b] = false;
        }
      }
      set_modifiers(io, e->modifiers());
      return true;
    }
    case QEvent::Wheel: {
      auto* e = static_cast<QWheelEvent*>(event);
      io.MouseWheel += static_cast<float>(e->angleDelta().y()) / 120.0f;
      io.MouseWheelH += static_cast<float>(e->angleDelta().x()) / 120.0f;
      set_modifiers(io, e->modifiers());
      return true;
    }
    case QEvent::KeyPress:
    case QEvent::KeyRelease: {
      auto* e = static_cast<QKeyEvent*>(event);
      const bool down = event->type() == QEvent::KeyPress;
      const int k = key_index(e->key());
      if (k >= 0) {
        if (down) {
          io.KeysDown[k] = true;
        } else if (released_key_count_ < 16) {
          released_keys_[released_key_count_++] = k;  // applied after the next frame
        } else {
          io.KeysDown[k] = false;
        }
      }
      set_modifiers(io, e->modifiers());
      if (down && !(e->modifiers() & (Qt::ControlModifier | Qt::MetaModifier)))
        for (QChar c : e->text())
          if (c.isPrint()) io.AddInputCharacter(c.unicode());
      return true;
    }
    case QEvent::FocusIn:
    case QEvent::FocusOut:
      io.AddFocusEvent(event->type() == QEvent::FocusIn);
      return true;
    case QEvent::Leave:
      io.MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
      return true;
    default:
      (void)widget;
      return false;
  }
}

void ImGuiQtBridge::new_frame(QWidget* widget, double delta_seconds) {
  ImGuiIO& io = ImGui::GetIO();
  const float dpr = static_cast<float>(widget->devicePixelRatioF());
  io.DisplaySize = ImVec2(static_cast<float>(widget->width()), static_cast<float>(widget->height()));
  io.DisplayFramebufferScale = ImVec2(dpr, dpr);
  io.DeltaTime = static_cast<float>(delta_seconds > 0 ? delta_seconds : 1.0 / 60.0);
}

void ImGuiQtBridge::end_frame() {
  ImGuiIO& io = ImGui::GetIO();
  io.MouseWheel = 0;
  io.MouseWheelH = 0;
  for (int i = 0; i < released_key_count_; ++i) io.KeysDown[released_keys_[i]] = false;
  released_key_count_ = 0;
  for (int b = 0; b < 3; ++b)
    if (released_buttons_[b]) {
      io.MouseDown[b] = false;
      released_buttons_[b] = false;
    }
}

}  // namespace ss::timeline
