"""A YOLOv8n-like detector in PyTorch, for the convolutional benchmark (not a test).

Ultralytics is not installed and nothing can be downloaded, so this rebuilds YOLOv8n's
architecture from its published configuration (depth 0.33, width 0.25): Conv blocks
(convolution, BatchNorm, SiLU), C2f blocks with bottlenecks, SPPF (three chained 5x5 max
pools), a PAN neck with nearest upsampling and concatenation, and the decoupled detection
head (box and class branches per stride, the distribution-focal box decoding with a
softmax over 16 bins, anchors and strides), all with random weights. The exported graph
has the same op mix as an Ultralytics export: Conv, Sigmoid, Mul, Split, Concat, MaxPool,
Resize, Reshape, Softmax, Transpose, Slice, Add, Sub, Div.
"""

from __future__ import annotations


def yolov8n_like(torch, classes: int = 80):
    """The module (eval mode) for input ``(N, 3, H, W)`` with H, W multiples of 32."""
    nn = torch.nn

    class Conv(nn.Module):
        def __init__(self, c1, c2, k=1, s=1):
            super().__init__()
            self.conv = nn.Conv2d(c1, c2, k, s, k // 2, bias=False)
            self.bn = nn.BatchNorm2d(c2)
            self.act = nn.SiLU()

        def forward(self, x):
            return self.act(self.bn(self.conv(x)))

    class Bottleneck(nn.Module):
        def __init__(self, c, shortcut):
            super().__init__()
            self.cv1, self.cv2, self.add = Conv(c, c, 3), Conv(c, c, 3), shortcut

        def forward(self, x):
            y = self.cv2(self.cv1(x))
            return x + y if self.add else y

    class C2f(nn.Module):
        def __init__(self, c1, c2, n=1, shortcut=False):
            super().__init__()
            self.c = c2 // 2
            self.cv1 = Conv(c1, 2 * self.c)
            self.cv2 = Conv((2 + n) * self.c, c2)
            self.m = nn.ModuleList(Bottleneck(self.c, shortcut) for _ in range(n))

        def forward(self, x):
            y = list(self.cv1(x).split((self.c, self.c), 1))
            y.extend(m(y[-1]) for m in self.m)
            return self.cv2(torch.cat(y, 1))

    class SPPF(nn.Module):
        def __init__(self, c1, c2):
            super().__init__()
            self.cv1, self.cv2 = Conv(c1, c1 // 2), Conv(c1 // 2 * 4, c2)
            self.m = nn.MaxPool2d(5, 1, 2)

        def forward(self, x):
            x = self.cv1(x)
            y1 = self.m(x)
            y2 = self.m(y1)
            return self.cv2(torch.cat((x, y1, y2, self.m(y2)), 1))

    class Detect(nn.Module):
        def __init__(self, channels, strides):
            super().__init__()
            self.reg = 16
            self.strides = strides
            c2, c3 = max(16, channels[0] // 4, 4 * self.reg), max(channels[0], min(classes, 100))
            self.cv2 = nn.ModuleList(
                nn.Sequential(Conv(c, c2, 3), Conv(c2, c2, 3), nn.Conv2d(c2, 4 * self.reg, 1)) for c in channels
            )
            self.cv3 = nn.ModuleList(
                nn.Sequential(Conv(c, c3, 3), Conv(c3, c3, 3), nn.Conv2d(c3, classes, 1)) for c in channels
            )
            self.register_buffer("bins", torch.arange(self.reg, dtype=torch.float32).view(1, self.reg, 1, 1))

        def forward(self, maps):
            n = maps[0].shape[0]
            boxes, scores, anchors, scales = [], [], [], []
            for i, x in enumerate(maps):
                h, w = x.shape[2], x.shape[3]
                boxes.append(self.cv2[i](x).view(n, 4 * self.reg, -1))
                scores.append(self.cv3[i](x).view(n, classes, -1))
                ys, xs = torch.meshgrid(
                    torch.arange(h, dtype=torch.float32) + 0.5,
                    torch.arange(w, dtype=torch.float32) + 0.5,
                    indexing="ij",
                )
                anchors.append(torch.stack((xs, ys)).view(2, -1))
                scales.append(torch.full((1, h * w), float(self.strides[i])))
            box = torch.cat(boxes, 2)
            anchor, stride = torch.cat(anchors, 1).unsqueeze(0), torch.cat(scales, 1).unsqueeze(0)
            # Distribution focal loss decoding: a softmax over 16 bins per side, its expectation.
            a = box.shape[2]
            dist = box.view(n, 4, self.reg, a).transpose(1, 2).softmax(1)
            ltrb = (dist * self.bins.view(1, self.reg, 1, 1)).sum(1)
            lt, rb = ltrb.chunk(2, 1)
            x1y1, x2y2 = anchor - lt, anchor + rb
            xywh = torch.cat(((x1y1 + x2y2) / 2, x2y2 - x1y1), 1) * stride
            return torch.cat((xywh, torch.cat(scores, 2).sigmoid()), 1)

    class YOLOv8n(nn.Module):
        def __init__(self):
            super().__init__()
            self.b0, self.b1, self.b2 = Conv(3, 16, 3, 2), Conv(16, 32, 3, 2), C2f(32, 32, 1, True)
            self.b3, self.b4 = Conv(32, 64, 3, 2), C2f(64, 64, 2, True)
            self.b5, self.b6 = Conv(64, 128, 3, 2), C2f(128, 128, 2, True)
            self.b7, self.b8, self.b9 = Conv(128, 256, 3, 2), C2f(256, 256, 1, True), SPPF(256, 256)
            self.up = nn.Upsample(scale_factor=2.0, mode="nearest")
            self.n12, self.n15 = C2f(384, 128), C2f(192, 64)
            self.n16, self.n18 = Conv(64, 64, 3, 2), C2f(192, 128)
            self.n19, self.n21 = Conv(128, 128, 3, 2), C2f(384, 256)
            self.detect = Detect((64, 128, 256), (8, 16, 32))

        def forward(self, x):
            x = self.b2(self.b1(self.b0(x)))
            p3 = self.b4(self.b3(x))
            p4 = self.b6(self.b5(p3))
            p5 = self.b9(self.b8(self.b7(p4)))
            n4 = self.n12(torch.cat((self.up(p5), p4), 1))
            n3 = self.n15(torch.cat((self.up(n4), p3), 1))
            n4 = self.n18(torch.cat((self.n16(n3), n4), 1))
            n5 = self.n21(torch.cat((self.n19(n4), p5), 1))
            return self.detect([n3, n4, n5])

    return YOLOv8n().eval()
