// Feeds Qt input to a Dear ImGui 1.86 context. 1.86 predates the io.AddKeyEvent/AddMousePosEvent
// queue: the backend writes io.MousePos, io.MouseDown[], io.MouseWheel(H), io.KeysDown[] (indices
// chosen here and published through io.KeyMap[]), the modifier flags, io.AddInputCharacter for
// text and io.AddFocusEvent for focus. Sizes are in logical pixels; the framebuffer scale carries
// the device pixel ratio (HiDPI).
#pragma once

class QEvent;
class QWidget;
struct ImGuiContext;

namespace ss::timeline {

class ImGuiQtBridge {
 public:
  // Sets the key map of `context` (which must be current).
  void install(ImGuiContext* context);
  // Updates ImGui's state from a Qt event sent to `widget`. Returns true for input events.
  bool feed(QEvent* event, QWidget* widget);
  // Before ImGui::NewFrame: display size, framebuffer scale and the frame's delta time.
  void new_frame(QWidget* widget, double delta_seconds);
  // After a frame: clears the wheel deltas (one notch scrolls once) and applies the key and
  // button releases that arrived since the frame began. 1.86 polls KeysDown[]/MouseDown[] once per
  // frame, so a press and release between two frames would otherwise never be seen.
  void end_frame();

 private:
  int released_keys_[16] = {};
  int released_key_count_ = 0;
  bool released_buttons_[3] = {};
};

}  // namespace ss::timeline
