from jaxonnx._cli import main

raise SystemExit(main())
