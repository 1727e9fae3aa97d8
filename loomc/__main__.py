from loomc.cli.main import main

raise SystemExit(main())
