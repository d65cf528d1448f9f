"""Run tags the git sensor sets and the deploying body reads: a run of a commit range is blue/green."""

COMMIT_TAG = "shift_left/commit"  # the run deploys the changes up to this commit...
SINCE_TAG = "shift_left/since"  # ...since this one, blue/green
CHANGES_TAG = "shift_left/changes"  # table -> category, for the UI and reviewers
