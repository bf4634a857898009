"""The GPU kit's in-process figure of what record's default window costs a job
(scripts/gpu/window_cost.py, reported by checks.py's overhead stage as default_window_cost)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.environ.get("SHARDSCOPE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")),
                                "scripts", "gpu"))
import window_cost  # noqa: E402


class ProjectedWindowCost(unittest.TestCase):
    def test_traced_steps_and_close_against_the_runs_own_later_steps(self):
        # The kit's job: 24 steps, warm-up 0-3 (slow, left out), steps 0-9 traced, step 10 closes
        # the window, 11-23 the job's own speed.
        steps = [300.0] * 4 + [140.0, 150.0, 130.0, 140.0, 145.0, 135.0] + [470.0] + [100.0, 101.0, 99.0] * 4 + [100.0]
        self.assertEqual(len(steps), 24)
        c = window_cost.projected_window_cost(steps, 10, 4)
        self.assertEqual(c["own_step_ms"], 100.0)
        self.assertEqual(c["traced_step_pct"], 40.0)  # median traced 140 ms against 100
        self.assertEqual(c["close_ms"], 370.0)
        # (10 x 40 + 370) / (N x 100)
        self.assertEqual(c["projected_pct"], {"24": 32.08, "200": 3.85, "1000": 0.77})

    def test_unchanged_job_costs_nothing(self):
        c = window_cost.projected_window_cost([120.0] * 30, 10, 4, job_steps=(200,))
        self.assertEqual(c["projected_pct"], {"200": 0.0})
        self.assertEqual(c["traced_step_pct"], 0.0)

    def test_too_few_steps_after_the_window(self):
        self.assertIsNone(window_cost.projected_window_cost([100.0] * 8, 10, 2))  # the CPU dry run's 8 steps
        self.assertIsNone(window_cost.projected_window_cost([100.0] * 13, 10, 2))  # only steps 11, 12 after


if __name__ == "__main__":
    unittest.main()
