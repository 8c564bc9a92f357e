"""What both the doctor and install judge: verdicts and the config checks."""
