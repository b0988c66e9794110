import sys

from tests.apiserver.server import main

sys.exit(main(sys.argv[1:]))
