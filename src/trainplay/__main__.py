import sys

from trainplay.cli import main

sys.exit(main())
