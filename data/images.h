#pragma once
// Image data sets and batch augmentation.
//
// Readers for the MNIST-style IDX format (raw or gzip'd) and the CIFAR-10 binary
// format, producing uint8 (N, C, H, W) images plus int64 labels, and the batch
// transforms the trainer applies on the fly: normalisation, random crop with zero
// padding and random horizontal flip. Every failure to read a file is a zoo::Error
// whose one-line message names the file and what is wrong with it.
#include <cstdint>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace zoo::data {

/// A labelled image data set held in memory.
struct ImageSet {
  torch::Tensor images;  // uint8 (N, C, H, W)
  torch::Tensor labels;  // int64 (N), each in [0, class_names.size())
  std::vector<std::string> class_names;
};

/// Reads an IDX file (the MNIST format), raw or gzip-compressed (detected from the
/// content, not the name). Only the unsigned-byte element type (0x08) is supported;
/// the result is a uint8 tensor with the file's dimensions, e.g. (N, 28, 28) for
/// images and (N) for labels. Throws zoo::Error for a missing/unreadable file, a bad
/// magic number, an unsupported element type, corrupt or truncated gzip data (or
/// non-gzip bytes after it; concatenated gzip members are fine), fewer data bytes than
/// the dimensions require, and also for bytes left over after the data: real IDX
/// files end exactly where their dimensions say, so extra bytes mean the header does
/// not describe the file.
torch::Tensor read_idx(const std::string& path);

/// Loads one split ("train" or "test") of a data set in the MNIST folder layout:
/// `dir/{train,t10k}-{images-idx3,labels-idx1}-ubyte`, each optionally with `.gz`
/// (the `train-images.idx3-ubyte` spelling is accepted as well). Images become
/// (N, 1, H, W). Throws zoo::Error when a file is missing or bad, when the image and
/// label counts differ, or when a label is not below class_names.size().
ImageSet load_mnist_like(const std::string& dir, const std::string& split,
                         std::vector<std::string> class_names);

/// The ten Fashion-MNIST classes, "T-shirt/top" ... "Ankle boot".
std::vector<std::string> fashion_mnist_classes();
/// The ten MNIST classes, "0" ... "9".
std::vector<std::string> mnist_classes();
/// The ten standard CIFAR-10 classes, "airplane" ... "truck".
std::vector<std::string> cifar10_classes();

/// Loads CIFAR-10 in the binary layout: `data_batch_1.bin` ... `data_batch_5.bin`
/// for "train", `test_batch.bin` for "test", each a sequence of records of one label
/// byte followed by 3072 image bytes (3 x 32 x 32, channel-major). `dir` may be the
/// folder holding the batches or its parent containing `cifar-10-batches-bin/`.
/// Class names come from `batches.meta.txt` when present, else cifar10_classes().
/// Throws zoo::Error naming the file when one is missing, empty, not a whole number
/// of 3073-byte records, or holds a label outside the class list.
ImageSet load_cifar10(const std::string& dir, const std::string& split);

/// uint8 (B, C, H, W) (or a single (C, H, W) image) -> float32 of the same shape:
/// x / 255, then (x - mean[c]) / std[c]. mean/std have one entry per channel or a
/// single entry used for every channel.
torch::Tensor to_float_normalized(const torch::Tensor& u8, const std::vector<double>& mean,
                                  const std::vector<double>& std);

/// Pads each image of a (B, C, H, W) batch (any dtype) with `padding` zeros on every
/// side and crops an H x W window back out at an offset drawn per image from `gen`.
/// padding 0 returns the batch unchanged. Deterministic given the generator's state.
torch::Tensor random_crop(const torch::Tensor& batch, int64_t padding, torch::Generator& gen);

/// Mirrors each image of a (B, C, H, W) batch left-right with probability p (one
/// draw per image from `gen`, so the result is deterministic given its state).
torch::Tensor random_hflip(const torch::Tensor& batch, double p, torch::Generator& gen);

/// Random erasing (Zhong et al. 2017; torchvision's RandomErasing with its defaults): with
/// probability p per image, a rectangle covering 2-33% of the image, aspect ratio
/// log-uniform in [0.3, 3.3] (up to 10 tries to fit one), is set to `fill` (one value per
/// channel, or one for all, in the batch's own scale: for uint8 images, the data set mean
/// x 255 makes the rectangle 0 after normalisation, as torchvision's default). The batch
/// (B, C, H, W, CPU) is returned as a copy; the same number of draws from `gen` per batch
/// whatever is erased, so the result is deterministic given its state.
torch::Tensor random_erasing(const torch::Tensor& batch, double p, const std::vector<double>& fill,
                             torch::Generator& gen);

/// What mix_images draws from: ImageDataOptions' mixup_alpha, cutmix_alpha and mix_prob.
struct MixOptions {
  double mixup_alpha = 0.0;
  double cutmix_alpha = 0.0;
  double prob = 1.0;
};

/// A mixed batch: the images, and per image the weight `lambda` (float, B) of its own label;
/// its partner's label (image B-1-i's) weighs 1 - lambda. lambda 1: not mixed.
struct MixedImages {
  torch::Tensor images;
  torch::Tensor lambda;
};

/// Mixup (Zhang et al. 2018) and CutMix (Yun et al. 2019) per image, as timm's "elem" mode:
/// with probability o.prob, image i of a (B, C, H, W) float CPU batch is mixed with its
/// partner, image B-1-i of the batch as given; with both alphas set, each mixed image takes
/// CutMix or Mixup with even odds. Mixup: lambda x_i + (1 - lambda) x_partner, lambda ~
/// Beta(mixup_alpha, mixup_alpha). CutMix: lambda ~ Beta(cutmix_alpha, cutmix_alpha), a box of
/// sides sqrt(1 - lambda) H and W, centred uniformly and clipped to the image, is copied from
/// the partner, and lambda becomes the share of the image left. The same draws from `gen` per
/// batch whatever is mixed, so the result is deterministic given its state.
MixedImages mix_images(const torch::Tensor& batch, const MixOptions& o, torch::Generator& gen);

}  // namespace zoo::data
