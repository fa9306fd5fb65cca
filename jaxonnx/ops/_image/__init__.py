"""Image ops: ImageDecoder, through Pillow (the optional extra ``jaxonnx[image]``)."""
