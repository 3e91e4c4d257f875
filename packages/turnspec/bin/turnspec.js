#!/usr/bin/env node
// The turnspec command: the compiled command line.
import "../dist/cli.js";
