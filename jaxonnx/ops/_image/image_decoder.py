"""ImageDecoder: version 20, through Pillow (the optional extra ``jaxonnx[image]``)."""

from __future__ import annotations

import io

import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.optional import import_optional

_CHANNELS = {"RGB": 3, "BGR": 3, "Grayscale": 1}


@register("ImageDecoder", 20, static=("encoded_stream",))
def image_decoder(encoded_stream, *, pixel_format="RGB"):
    """Implements ONNX ImageDecoder: the pixels of an encoded image, channels last.

    Decodes with Pillow (``pip install 'jaxonnx[image]'``) whatever format it reads: BMP,
    JPEG (libjpeg-turbo's "fancy" chroma upsampling, as the text asks), JPEG 2000, TIFF,
    PNG, WebP and the PNM family among others. Grayscale is Pillow's ITU-R 601-2 luma
    (``L = (299 R + 587 G + 114 B) / 1000``); colour images with alpha drop it, and 16-bit
    grayscale keeps the high byte. A stream that cannot be decoded gives an empty image of
    shape ``[0, 0, channels]``, as the text says. The image's size comes from the bytes,
    so ``encoded_stream`` must be known when the op runs (not traced under ``jax.jit``).

    Args:
        encoded_stream: uint8 bytes of the encoded image.
        pixel_format: "RGB", "BGR" or "Grayscale".

    Returns:
        uint8 ``[height, width, 3]`` (``[height, width, 1]`` for "Grayscale").

    Example:
        >>> import io
        >>> from PIL import Image
        >>> stream = io.BytesIO()
        >>> Image.new("RGB", (3, 2), (255, 128, 0)).save(stream, format="PNG")
        >>> image = jaxonnx.ops.image_decoder(np.frombuffer(stream.getvalue(), np.uint8), pixel_format="BGR")
        >>> image.shape, image[0, 0]
        ((2, 3, 3), array([  0, 128, 255], dtype=uint8))
    """
    if pixel_format not in _CHANNELS:
        raise OnnxValidationError(f"got `pixel_format`={pixel_format!r}; it must be one of {', '.join(_CHANNELS)}.")
    Image = import_optional("PIL.Image", package="Pillow", extra="image", needed_for="to decode images")
    stream = io.BytesIO(np.asarray(encoded_stream, np.uint8).tobytes())
    try:
        with Image.open(stream) as image:
            image.load()
            pixels = _pixels(image, grayscale=pixel_format == "Grayscale")
    except (OSError, ValueError, SyntaxError, EOFError, Image.DecompressionBombError):
        # Pillow's errors for unknown, truncated and corrupt streams (and for images too
        # large to decode safely): the text returns an empty image for any failure.
        return np.zeros((0, 0, _CHANNELS[pixel_format]), np.uint8)
    return pixels[:, :, ::-1].copy() if pixel_format == "BGR" else pixels


def _pixels(image, *, grayscale: bool) -> np.ndarray:
    """``[height, width, channels]`` uint8 pixels of a loaded Pillow image."""
    if image.mode.startswith("I;16"):
        # 16-bit grayscale: its high byte, as libpng's and OpenCV's 8-bit reads keep it.
        gray = (np.asarray(image).astype(np.uint16) >> 8).astype(np.uint8)
        return gray[:, :, None] if grayscale else np.repeat(gray[:, :, None], 3, axis=2)
    if grayscale:
        return np.asarray(image.convert("L"))[:, :, None]
    return np.asarray(image.convert("RGB"))


__all__ = ["image_decoder"]
