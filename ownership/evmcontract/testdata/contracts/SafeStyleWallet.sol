// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// SafeStyleWallet is a threshold multisig that answers EIP-1271 the way a
/// Safe with its compatibility fallback handler does: the hash it is asked
/// about is wrapped as an EIP-712 SafeMessage (domain: chain id and this
/// wallet's address), and the signature is `threshold` 65-byte r||s||v
/// EIP-712 signatures of distinct owners, ordered by ascending owner
/// address.
contract SafeStyleWallet {
    bytes4 internal constant MAGIC = 0x1626ba7e;
    bytes32 internal constant DOMAIN_TYPEHASH = keccak256("EIP712Domain(uint256 chainId,address verifyingContract)");
    bytes32 internal constant SAFE_MESSAGE_TYPEHASH = keccak256("SafeMessage(bytes message)");
    uint256 internal constant HALF_N = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0;

    mapping(address => bool) public isOwner;
    uint256 public immutable threshold;

    constructor(address[] memory owners, uint256 threshold_) {
        require(threshold_ > 0 && threshold_ <= owners.length, "SafeStyleWallet: bad threshold");
        for (uint256 i = 0; i < owners.length; i++) {
            require(owners[i] != address(0) && !isOwner[owners[i]], "SafeStyleWallet: bad owner");
            isOwner[owners[i]] = true;
        }
        threshold = threshold_;
    }

    function messageHash(bytes32 hash) public view returns (bytes32) {
        bytes32 domain = keccak256(abi.encode(DOMAIN_TYPEHASH, block.chainid, address(this)));
        bytes32 structHash = keccak256(abi.encode(SAFE_MESSAGE_TYPEHASH, keccak256(abi.encode(hash))));
        return keccak256(abi.encodePacked(bytes1(0x19), bytes1(0x01), domain, structHash));
    }

    function isValidSignature(bytes32 hash, bytes calldata sigs) external view returns (bytes4) {
        if (sigs.length != threshold * 65) {
            return 0xffffffff;
        }
        bytes32 digest = messageHash(hash);
        address last = address(0);
        for (uint256 i = 0; i < threshold; i++) {
            bytes calldata sig = sigs[i * 65:(i + 1) * 65];
            uint8 v = uint8(sig[64]);
            if ((v != 27 && v != 28) || uint256(bytes32(sig[32:64])) > HALF_N) {
                return 0xffffffff;
            }
            address signer = ecrecover(digest, v, bytes32(sig[0:32]), bytes32(sig[32:64]));
            if (signer <= last || !isOwner[signer]) {
                return 0xffffffff;
            }
            last = signer;
        }
        return MAGIC;
    }
}
