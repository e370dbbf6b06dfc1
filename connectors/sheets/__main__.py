import sys

from connectors.sheets.cli import main

sys.exit(main())
