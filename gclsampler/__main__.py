import sys

from gclsampler.cli import main

sys.exit(main())
