import sys

from kltui.cli import main

sys.exit(main())
