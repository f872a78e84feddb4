#!/bin/bash
# Long-context training: Llama 3 8B continued pre-training at 128K tokens a
# sequence with Megatron-LM on 32 nodes of 8 H100 GPUs, context parallelism
# 16 as an inner all-to-all of 2 and an outer ring of 8 (--cp-comm-type
# a2a+p2p), tp 2, full recomputation of every layer.

export CUDA_DEVICE_MAX_CONNECTIONS=1
SEQ=131072
CP=16
DATA_PATH=/data/long-docs_text_document

srun --nodes 32 --ntasks-per-node 8 python pretrain_gpt.py \
    --num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 \
    --num-attention-heads 32 --group-query-attention --num-query-groups 8 \
    --seq-length $SEQ --max-position-embeddings $SEQ \
    --position-embedding-type rope --rotary-base 500000 \
    --swiglu --normalization RMSNorm --disable-bias-linear \
    --untie-embeddings-and-output-weights --vocab-size 128256 \
    --tensor-model-parallel-size 2 --sequence-parallel \
    --context-parallel-size $CP --cp-comm-type a2a+p2p \
    --hierarchical-context-parallel-sizes 2 8 \
    --micro-batch-size 1 --global-batch-size 64 \
    --recompute-granularity full --recompute-method uniform --recompute-num-layers 1 \
    --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather \
    --bf16 --attention-backend flash \
    --lr 1e-5 --min-lr 1e-6 --lr-decay-style cosine --train-iters 2000 \
    --data-path $DATA_PATH --tokenizer-type HuggingFaceTokenizer \
    --tokenizer-model meta-llama/Meta-Llama-3-8B \
    --load /checkpoints/llama3-8b --save /checkpoints/llama3-8b-128k \
    --log-interval 10 --eval-interval 500 --eval-iters 10
