from jaxonnx.cli import main

raise SystemExit(main())
