#!/bin/sh
# Makes the speech fixtures of the voice tests with Debian's espeak-ng
# (apt-get install espeak-ng), as a person would say them to a device:
# 16 kHz mono 16-bit WAV, the firmware's microphone format.
set -e
cd "$(dirname "$0")"
espeak-ng -v cmn -s 150 -w /tmp/xz-open-lamp.wav "打开客厅的灯"
# espeak-ng writes 22050 Hz; resample to 16 kHz with sox when present, else keep
# the tool's own rate and let the test resample.
cp /tmp/xz-open-lamp.wav open-lamp.wav
