from vyre_build.cli import main

raise SystemExit(main())
