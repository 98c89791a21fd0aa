"""The MI355X estimate (`harness estimate N`): what a submission would take on the leaderboard's MI355X, with its
error band. Parent side: the cost model and its data file with sources (calibration, model), the fit and its
leave-one-out (fit), what a recorded call launches (launches), and one estimate run (runner). The child's side of
the recording is harness/run/recording.py. An estimate is never a measured time: its records have mode "estimate".
"""
